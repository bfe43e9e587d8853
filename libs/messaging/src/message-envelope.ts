import { MessagingError } from './errors';

/**
 * The envelope of every message HCP publishes to Kafka, as the JSON value of the record:
 *
 *   { schema_version, event_id, type, occurred_at, project_id, trace_id, payload }
 *
 * - `schema_version` (integer) versions the envelope together with the payload of `type`; consumers
 *   refuse or upcast versions they do not know. Also in the `schema-version` header.
 * - `event_id` is stable: the same source event always gives the same id (delivery is at least once, so
 *   consumers de-duplicate by it). Also in the `event-id` header.
 * - `type` names the payload's shape, for example `audit.request_received` or `metering.vm_powered_on`.
 * - `occurred_at` is an ISO 8601 UTC timestamp of when the change happened (not when it was published).
 * - `project_id` is the tenant project; null only for platform-scope records (ops actions on no project).
 *   The record key is the project id (PLATFORM_KEY for null), so one project's messages stay in one
 *   partition, in order.
 * - `trace_id` carries the request's trace (also in the `trace-id` header) or null.
 */
export const MESSAGE_SCHEMA_VERSION = 1;

export interface MessageEnvelope<P = unknown> {
  schema_version: number;
  event_id: string;
  type: string;
  occurred_at: string;
  project_id: string | null;
  trace_id: string | null;
  payload: P;
}

/** Record key of platform-scope messages (project_id null), so they too keep one partition and an order. */
export const PLATFORM_KEY = '_platform';

export const HEADER_EVENT_ID = 'event-id';
export const HEADER_TRACE_ID = 'trace-id';
export const HEADER_SCHEMA_VERSION = 'schema-version';
export const HEADER_EVENT_TYPE = 'event-type';
export const HEADER_CONTENT_TYPE = 'content-type';

/** A record as it goes on the wire: string key, JSON value, string headers. */
export interface EnvelopeRecord {
  key: string;
  value: string;
  headers: Record<string, string>;
}

/** Kafka's default max.message.bytes is about 1 MB; stay under it with room for the record overhead. */
export const MAX_VALUE_BYTES = 900_000;

const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z$/;

/** Builds an envelope at the current schema version. */
export function envelope<P>(
  fields: Omit<MessageEnvelope<P>, 'schema_version' | 'trace_id' | 'occurred_at'> & {
    occurred_at: string | Date;
    trace_id?: string | null;
    schema_version?: number;
  },
): MessageEnvelope<P> {
  return {
    schema_version: fields.schema_version ?? MESSAGE_SCHEMA_VERSION,
    event_id: fields.event_id,
    type: fields.type,
    occurred_at: fields.occurred_at instanceof Date ? fields.occurred_at.toISOString() : fields.occurred_at,
    project_id: fields.project_id,
    trace_id: fields.trace_id ?? null,
    payload: fields.payload,
  };
}

/** Problems with an envelope, empty when it is valid. */
export function envelopeProblems(value: unknown): string[] {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return ['the message is not a JSON object'];
  const e = value as Record<string, unknown>;
  const problems: string[] = [];
  const text = (field: string, max: number, nullable: boolean): void => {
    const v = e[field];
    if (v === null && nullable) return;
    if (typeof v !== 'string' || v.length === 0 || v.length > max)
      problems.push(`${field} must be a non-empty string of at most ${max} characters${nullable ? ' or null' : ''}`);
  };
  if (!Number.isInteger(e.schema_version) || (e.schema_version as number) < 1)
    problems.push('schema_version must be a positive integer');
  text('event_id', 200, false);
  text('type', 200, false);
  text('project_id', 200, true);
  text('trace_id', 200, true);
  if (typeof e.occurred_at !== 'string' || !ISO_UTC.test(e.occurred_at) || Number.isNaN(Date.parse(e.occurred_at))) {
    problems.push('occurred_at must be an ISO 8601 UTC timestamp (YYYY-MM-DDTHH:MM:SS[.fff]Z)');
  }
  if (!('payload' in e) || e.payload === undefined) problems.push('payload is missing');
  return problems;
}

/** Throws INVALID_MESSAGE naming the event id and the broken fields. */
export function assertValidEnvelope(value: unknown): asserts value is MessageEnvelope {
  const problems = envelopeProblems(value);
  if (problems.length > 0) {
    const id =
      typeof (value as { event_id?: unknown })?.event_id === 'string'
        ? ` ${(value as { event_id: string }).event_id}`
        : '';
    throw new MessagingError('INVALID_MESSAGE', `invalid message${id}: ${problems.join('; ')}`);
  }
}

/** The record for one envelope: key = project id, JSON value, headers event-id, trace-id, schema-version. */
export function toRecord(message: MessageEnvelope): EnvelopeRecord {
  assertValidEnvelope(message);
  let value: string;
  try {
    value = JSON.stringify({
      schema_version: message.schema_version,
      event_id: message.event_id,
      type: message.type,
      occurred_at: message.occurred_at,
      project_id: message.project_id,
      trace_id: message.trace_id,
      payload: message.payload,
    });
  } catch (error) {
    throw new MessagingError(
      'INVALID_MESSAGE',
      `invalid message ${message.event_id}: payload is not JSON-serialisable (${(error as Error).message})`,
      { cause: error },
    );
  }
  if (Buffer.byteLength(value) > MAX_VALUE_BYTES) {
    throw new MessagingError(
      'INVALID_MESSAGE',
      `invalid message ${message.event_id}: ${Buffer.byteLength(value)} bytes, more than ${MAX_VALUE_BYTES}`,
    );
  }
  const headers: Record<string, string> = {
    [HEADER_EVENT_ID]: message.event_id,
    [HEADER_SCHEMA_VERSION]: String(message.schema_version),
    [HEADER_EVENT_TYPE]: message.type,
    [HEADER_CONTENT_TYPE]: 'application/json',
  };
  if (message.trace_id !== null) headers[HEADER_TRACE_ID] = message.trace_id;
  return { key: message.project_id ?? PLATFORM_KEY, value, headers };
}

/** Parses and validates a record value (for consumers and tests). Throws INVALID_MESSAGE. */
export function parseEnvelope<P = unknown>(value: Buffer | string | null | undefined): MessageEnvelope<P> {
  if (value === null || value === undefined)
    throw new MessagingError('INVALID_MESSAGE', 'invalid message: empty value');
  let parsed: unknown;
  try {
    parsed = JSON.parse(typeof value === 'string' ? value : value.toString('utf8'));
  } catch (error) {
    throw new MessagingError('INVALID_MESSAGE', 'invalid message: the value is not JSON', { cause: error });
  }
  assertValidEnvelope(parsed);
  return parsed as MessageEnvelope<P>;
}
