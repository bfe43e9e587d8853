import { createHcpUpcasters } from '@hcp/domain';
import { DomainEventCodec, InMemoryEventStore } from '@hcp/eventstore';
import { RequestRecorder } from './request-recorder';

const LONG_PROJECT = 'p'.repeat(201);
const SECRET = 'eyJhbGciOiJFZERTQSJ9.payload.signature-MARKER';

function setup() {
  const store = new InMemoryEventStore();
  const codec = new DomainEventCodec(createHcpUpcasters());
  const stored = async () =>
    (await store.readAll('start', 100)).map((r) => ({ stream: r.streamId, event: codec.decode(r).event }));
  return { store, codec, stored, recorder: new RequestRecorder(store, codec) };
}

describe('RequestRecorder', () => {
  it('records a refusal without the raw URL, its query string, or an invalid project id', async () => {
    const { recorder, stored } = setup();
    await recorder.refused(
      {
        actor: null,
        action: 'GET /v1/projects/:project_id/vms',
        method: 'GET',
        path: `/v1/projects/${LONG_PROJECT}/vms?access_token=${SECRET}`,
        project_id: LONG_PROJECT,
        code: 'UNAUTHORIZED',
        status: 401,
      },
      'trace-1',
    );
    const [{ event }] = await stored();
    expect(event).toMatchObject({
      type: 'RequestRefused',
      version: 2,
      data: { route: '/v1/projects/:project_id/vms', project_id: null, target: {} },
    });
    expect(JSON.stringify(event)).not.toContain(SECRET);
    expect(JSON.stringify(event).length).toBeLessThan(1_000);
  });

  it('records the answer to a request on the stream of its RequestReceived', async () => {
    const { recorder, stored } = setup();
    const received = await recorder.received(
      {
        actor: 'tom',
        method: 'POST',
        route: '/v1/projects/:project_id/vms',
        scope: 'tenant',
        params: { project_id: 'p1' },
      },
      'trace-2',
    );
    await recorder.answered(received, { status: 422, error_code: 'CONFLICT', job_id: null }, 'trace-2');
    const events = await stored();
    expect(events.map((e) => [e.stream, e.event.type])).toEqual([
      [received.streamId, 'RequestReceived'],
      [received.streamId, 'RequestAnswered'],
    ]);
    expect(events[1].event.data).toMatchObject({ project_id: 'p1', status: 422, error_code: 'CONFLICT' });
  });

  it('carries an accepted request as one append of both events, the same every time it is asked', async () => {
    const { recorder, store, stored } = setup();
    const carried = recorder.carry(
      {
        actor: 'tom',
        method: 'POST',
        route: '/v1/projects/:project_id/vms',
        scope: 'tenant',
        params: { project_id: 'p1' },
      },
      'trace-3',
    );
    const jobId = '0b0e7c1e-4a5f-4d55-9a39-1c1f6a3f9f11';

    const record = carried.acceptedRecord(jobId);
    await store.appendMany([record]);
    await store.appendMany([carried.acceptedRecord(jobId)]);

    const events = await stored();
    expect(carried.acceptedRecord(jobId).events.map((e) => e.id)).toEqual(record.events.map((e) => e.id));
    expect(events.map((e) => [e.stream, e.event.type])).toEqual([
      [carried.request.streamId, 'RequestReceived'],
      [carried.request.streamId, 'RequestAnswered'],
    ]);
    expect(events[1].event.data).toMatchObject({ project_id: 'p1', status: 202, error_code: null, job_id: jobId });
  });

  it('records a carried request its handler did not commit, with its outcome, on the same stream', async () => {
    const { recorder, stored } = setup();
    const carried = recorder.carry(
      {
        actor: 'tom',
        method: 'POST',
        route: '/v1/projects/:project_id/vms',
        scope: 'tenant',
        params: { project_id: 'p1' },
      },
      'trace-4',
    );

    await recorder.recordedAfter(carried, { status: 403, error_code: 'QUOTA_EXCEEDED', job_id: null }, 'trace-4');

    const events = await stored();
    expect(events.map((e) => [e.stream, e.event.type])).toEqual([
      [carried.request.streamId, 'RequestReceived'],
      [carried.request.streamId, 'RequestAnswered'],
    ]);
    expect(events[1].event.data).toMatchObject({ status: 403, error_code: 'QUOTA_EXCEEDED', job_id: null });
    expect(carried.committedJobId).toBeNull();
  });

  it('stamps an answer written in the same append as its receipt after it, so the trail reads received first', async () => {
    const { recorder, store, codec } = setup();
    const facts = {
      actor: 'tom',
      method: 'POST',
      route: '/v1/projects/:project_id/vms',
      scope: 'tenant' as const,
      params: { project_id: 'p1' },
    };
    const accepted = recorder.carry(facts, 'trace-5');
    const refused = recorder.carry(facts, 'trace-6');

    await store.appendMany([accepted.acceptedRecord('0b0e7c1e-4a5f-4d55-9a39-1c1f6a3f9f12')]);
    await recorder.recordedAfter(refused, { status: 403, error_code: 'QUOTA_EXCEEDED', job_id: null }, 'trace-6');

    for (const carried of [accepted, refused]) {
      const [received, answered] = (await store.readStream(carried.request.streamId)).map((r) => codec.decode(r));
      expect(received.event.type).toBe('RequestReceived');
      expect(Date.parse(answered.at)).toBeGreaterThan(Date.parse(received.at));
    }
  });
});
