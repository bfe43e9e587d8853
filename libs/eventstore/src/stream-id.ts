import { HcpError } from '@hcp/domain';

/** Segments a stream id gets when it is built from a value that was missing (`vm-${undefined}`). */
const MISSING_VALUE_SEGMENTS = new Set(['undefined', 'null', 'NaN', '[object Object]']);
const SHOWN_CHARS = 100;

/** A stream id built from a missing value: a bug in the writer, refused before anything is written. */
export class InvalidStreamIdError extends HcpError {
  constructor(readonly streamId: string) {
    const shown = streamId.length > SHOWN_CHARS ? `${streamId.slice(0, SHOWN_CHARS)}…` : streamId;
    super('INTERNAL_ERROR', `stream id ${JSON.stringify(shown)} is built from a missing value`, undefined, false);
    this.name = 'InvalidStreamIdError';
  }
}

/**
 * HCP's stream ids are `<category>-<id>`: refuses one that is blank, ends with its separator (`quota-`, an
 * empty id), or has a `-`-separated segment that is the text of a missing value (`job-undefined`,
 * `vm-null`). Every adapter
 * calls it first in append, so a process manager fed a malformed event cannot leave a `job-undefined`
 * stream behind.
 */
export function assertStreamId(streamId: unknown): asserts streamId is string {
  if (typeof streamId !== 'string') throw new InvalidStreamIdError(String(streamId));
  if (
    streamId.trim() === '' ||
    streamId.endsWith('-') ||
    streamId.split('-').some((s) => MISSING_VALUE_SEGMENTS.has(s))
  )
    throw new InvalidStreamIdError(streamId);
}
