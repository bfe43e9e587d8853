import { createHcpUpcasters } from '@hcp/domain';
import { DomainEventCodec, InMemoryEventStore } from '@hcp/eventstore';
import { Principal } from '@hcp/auth';
import { BreakGlassRecorder } from './break-glass.recorder';

const LONG_PROJECT = 'p'.repeat(201);
const SECRET = 'eyJhbGciOiJFZERTQSJ9.payload.signature-MARKER';

function setup() {
  const store = new InMemoryEventStore();
  const codec = new DomainEventCodec(createHcpUpcasters());
  const stored = async () =>
    (await store.readAll('start', 100)).map((r) => ({ stream: r.streamId, event: codec.decode(r).event }));
  return { store, codec, stored };
}

describe('BreakGlassRecorder', () => {
  it('records the path without its query string, a bounded reason and no invalid project id', async () => {
    const { store, codec, stored } = setup();
    const principal = { sub: 'bea', opsRoles: ['break-glass'] } as unknown as Principal;
    await new BreakGlassRecorder(store, codec).record(
      principal,
      {
        reason: 'r'.repeat(5_000),
        method: 'GET',
        path: `/v1/projects/${LONG_PROJECT}/vms?access_token=${SECRET}`,
        projectId: LONG_PROJECT,
      },
      'trace-3',
    );
    const [{ event }] = await stored();
    const data = event.data as { path: string; reason: string; project_id: string | null };
    expect(data.project_id).toBeNull();
    expect(data.path).not.toContain('?');
    expect(data.reason.length).toBeLessThanOrEqual(512);
    expect(JSON.stringify(event)).not.toContain(SECRET);
  });
});
