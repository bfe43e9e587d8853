import { randomUUID } from 'node:crypto';
import { EntityManager } from 'typeorm';
import { HCP_EVENT_VERSIONS } from '@hcp/domain';
import { DecodedEvent } from '@hcp/eventstore';
import { Projection, readModelProjections, SILENT_SINKS } from '@hcp/projections';
import { OrphanJobDispatcherProjection } from '../orphans/jobs/orphan-job-dispatcher.projection';
import { QuotaReleaseProjection } from '../quotas/quota-release.projection';
import { VmJobDispatcherProjection } from '../vms/jobs/vm-job-dispatcher.projection';

/** A transaction (and dependencies) that fail the test on any use: an ignored event must touch nothing. */
const untouchable = <T extends object>(what: string): T =>
  new Proxy({} as T, {
    get: (_target, prop) => {
      throw new Error(`${what}.${String(prop)} used for an event the projection declares it ignores`);
    },
  });

const projections: Projection[] = [
  ...readModelProjections(SILENT_SINKS),
  new VmJobDispatcherProjection(untouchable('jobs'), untouchable('queue')),
  new OrphanJobDispatcherProjection(untouchable('jobs'), untouchable('queue')),
  new QuotaReleaseProjection(untouchable('quotas')),
];
const declaring = projections.filter((p) => p.eventTypes);

const ignoredEvent = (type: string, streamId: string): DecodedEvent => ({
  event: { type, version: HCP_EVENT_VERSIONS[type]!, data: {} } as DecodedEvent['event'],
  eventId: randomUUID(),
  streamId,
  revision: 0n,
  position: 1n,
  at: new Date().toISOString(),
  context: {},
});

describe('projections that declare the event types they act on', () => {
  it('include the process managers that most events pass by', () => {
    expect(declaring.map((p) => p.name).sort()).toEqual(
      ['cluster-usage', 'job-dispatcher', 'orphan-job-dispatcher', 'quota-release'].sort(),
    );
  });

  it.each(declaring.map((p) => [p.name, p] as const))(
    '%s declares only types HCP knows, and ignores every other type of its streams',
    async (_name, projection) => {
      for (const type of projection.eventTypes!) expect(HCP_EVENT_VERSIONS[type]).toBeDefined();
      const others = Object.keys(HCP_EVENT_VERSIONS).filter((type) => !projection.eventTypes!.has(type));
      const events = projection.streamPrefixes.flatMap((prefix) =>
        others.map((type) => ignoredEvent(type, `${prefix}${randomUUID()}`)),
      );

      await expect(projection.apply(events, untouchable<EntityManager>('tx'))).resolves.toBeUndefined();
    },
  );
});
