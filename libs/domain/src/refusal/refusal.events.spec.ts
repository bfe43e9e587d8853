import { auditRecordOf } from '../audit/audit-record';
import { createHcpUpcasters } from '../hcp-events';
import { RequestRefusalsSuppressed } from './refusal.events';

const summary = (codes: Record<string, number>): RequestRefusalsSuppressed => ({
  type: 'RequestRefusalsSuppressed',
  version: 1,
  data: {
    client_address: '192.0.2.9',
    actor: null,
    window_start: '2026-12-03T08:00:00.000Z',
    window_end: '2026-12-03T08:01:00.000Z',
    suppressed: 1_980,
    rate_limited: 1_000,
    codes,
  },
});

const recordOf = (event: RequestRefusalsSuppressed) =>
  auditRecordOf(
    {
      event,
      event_id: '00000000-0000-4000-8000-000000000002',
      stream_id: 'request-2',
      occurred_at: '2026-12-03T08:01:00.000Z',
      actor: 'anonymous',
      trace_id: 'trace-2',
    },
    null,
  );

describe('suppressed refusals', () => {
  it('are an event type this release reads', () => {
    expect(createHcpUpcasters().knows('RequestRefusalsSuppressed')).toBe(true);
  });

  it('become one denied audit record for the address, with how many were counted', () => {
    expect(recordOf(summary({ UNAUTHORIZED: 1_980 }))).toMatchObject({
      actor: null,
      action: 'request.refusals',
      target: { client_address: '192.0.2.9' },
      result: 'denied',
      error_code: 'UNAUTHORIZED',
      details: { suppressed: 1_980, rate_limited: 1_000, codes: { UNAUTHORIZED: 1_980 } },
    });
  });

  it('name no single error code when the refusals had several', () => {
    const record = recordOf(summary({ UNAUTHORIZED: 1_000, FORBIDDEN: 980 }));
    expect(record?.result).toBe('denied');
    expect(record?.error_code).toBeUndefined();
  });
});
