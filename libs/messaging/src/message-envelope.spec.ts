import { MessagingError } from './errors';
import {
  envelope,
  envelopeProblems,
  MAX_VALUE_BYTES,
  MESSAGE_SCHEMA_VERSION,
  parseEnvelope,
  PLATFORM_KEY,
  toRecord,
} from './message-envelope';

const base = () =>
  envelope({
    event_id: 'evt-1',
    type: 'metering.vm_allocated',
    occurred_at: new Date('2026-03-04T05:06:07.089Z'),
    project_id: 'proj-1',
    trace_id: '4bf92f3577b34da6a3ce929d0e0e4736',
    payload: { vm_id: 'vm-1', vcpus: 2 },
  });

function invalid(fn: () => unknown): MessagingError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(MessagingError);
    expect((error as MessagingError).code).toBe('INVALID_MESSAGE');
    expect((error as MessagingError).retriable).toBe(false);
    return error as MessagingError;
  }
  throw new Error('expected INVALID_MESSAGE');
}

describe('message envelope', () => {
  it('builds an envelope at the current schema version with an ISO timestamp', () => {
    expect(base()).toEqual({
      schema_version: MESSAGE_SCHEMA_VERSION,
      event_id: 'evt-1',
      type: 'metering.vm_allocated',
      occurred_at: '2026-03-04T05:06:07.089Z',
      project_id: 'proj-1',
      trace_id: '4bf92f3577b34da6a3ce929d0e0e4736',
      payload: { vm_id: 'vm-1', vcpus: 2 },
    });
  });

  it('maps to a record: key = project id, JSON value, event-id / trace-id / schema-version headers', () => {
    const record = toRecord(base());
    expect(record.key).toBe('proj-1');
    expect(JSON.parse(record.value)).toEqual(base());
    expect(Object.keys(JSON.parse(record.value))).toEqual([
      'schema_version',
      'event_id',
      'type',
      'occurred_at',
      'project_id',
      'trace_id',
      'payload',
    ]);
    expect(record.headers).toEqual({
      'event-id': 'evt-1',
      'trace-id': '4bf92f3577b34da6a3ce929d0e0e4736',
      'schema-version': '1',
      'event-type': 'metering.vm_allocated',
      'content-type': 'application/json',
    });
  });

  it('keys platform-scope messages with PLATFORM_KEY and leaves out an absent trace', () => {
    const record = toRecord({ ...base(), project_id: null, trace_id: null });
    expect(record.key).toBe(PLATFORM_KEY);
    expect(record.headers['trace-id']).toBeUndefined();
    expect(JSON.parse(record.value).project_id).toBeNull();
  });

  it('drops fields outside the envelope from the value', () => {
    const record = toRecord({ ...base(), secret: 'x' } as ReturnType<typeof base>);
    expect(record.value).not.toContain('secret');
  });

  it('refuses broken envelopes, naming the event and the fields', () => {
    expect(invalid(() => toRecord({ ...base(), occurred_at: '2026-03-04 05:06' })).message).toMatch(
      /evt-1.*occurred_at/,
    );
    expect(invalid(() => toRecord({ ...base(), event_id: '' })).message).toMatch(/event_id/);
    expect(invalid(() => toRecord({ ...base(), schema_version: 0 })).message).toMatch(/schema_version/);
    expect(invalid(() => toRecord({ ...base(), project_id: '' })).message).toMatch(/project_id/);
    expect(invalid(() => toRecord({ ...base(), payload: undefined })).message).toMatch(/payload/);
    expect(invalid(() => toRecord({ ...base(), payload: { n: BigInt(1) } })).message).toMatch(/JSON-serialisable/);
    expect(invalid(() => toRecord({ ...base(), payload: 'x'.repeat(MAX_VALUE_BYTES) })).message).toMatch(/bytes/);
    expect(envelopeProblems(null)).toEqual(['the message is not a JSON object']);
  });

  it('parses a record value back and refuses what is not an envelope', () => {
    expect(parseEnvelope(Buffer.from(toRecord(base()).value))).toEqual(base());
    invalid(() => parseEnvelope('not json'));
    invalid(() => parseEnvelope(null));
    invalid(() => parseEnvelope(JSON.stringify({ event_id: 'x' })));
  });
});
