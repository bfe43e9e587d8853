import { HcpError, MISSING_VALUE_IDS } from '@hcp/domain';

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
 * empty id), or whose id is the text of a missing value (`job-undefined`, `vm-null`). Every adapter calls
 * it first in append, so a process manager fed a malformed event cannot leave a `job-undefined` stream
 * behind. Only the whole id is checked: ids that tenants and ops choose may contain such words
 * (`quota-team-null`), and the API refuses those words as a whole id (MISSING_VALUE_IDS in the domain).
 */
export function assertStreamId(streamId: unknown): asserts streamId is string {
  if (typeof streamId !== 'string') throw new InvalidStreamIdError(String(streamId));
  const id = streamId.slice(streamId.indexOf('-') + 1);
  if (streamId.trim() === '' || streamId.endsWith('-') || MISSING_VALUE_IDS.has(id))
    throw new InvalidStreamIdError(streamId);
}
