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
});
