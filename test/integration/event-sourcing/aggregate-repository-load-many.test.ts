import { randomBytes, randomUUID } from 'node:crypto';
import { Pool } from 'pg';
import { createHcpUpcasters, decideVm, recordVmOutcome, type VmCreateRequestedData } from '@hcp/domain';
import {
  DomainEventCodec,
  type EventStore,
  installPostgresEventStoreSchema,
  PostgresEventStore,
  type ReadStreamOptions,
  type RecordedEvent,
  type StreamRead,
} from '@hcp/eventstore';
import { eventContext } from '../../../src/platform/event-sourcing/event-context';
import { VmRepository } from '../../../src/vms/vm.repository';

const DATABASE_URL = process.env.HCP_TEST_DATABASE_URL ?? 'postgres://hcp:hcp@127.0.0.1:5432/hcp_test';

/** The real store, with a record of the reads asked of it (which streams, from which revision). */
class ReadRecordingStore {
  readonly batches: StreamRead[][] = [];
  readonly singles: Array<{ streamId: string; options?: ReadStreamOptions }> = [];

  constructor(readonly inner: EventStore) {}

  wrapped(): EventStore {
    return new Proxy(this.inner, {
      get: (target, key, receiver) => {
        if (key === 'readStreams')
          return (reads: StreamRead[]) => {
            this.batches.push(reads);
            return target.readStreams(reads);
          };
        if (key === 'readStream')
          return (streamId: string, options?: ReadStreamOptions): Promise<RecordedEvent[]> => {
            this.singles.push({ streamId, options });
            return target.readStream(streamId, options);
          };
        const value = Reflect.get(target, key, receiver);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
  }
}

/**
 * AggregateRepository.loadMany on real PostgreSQL, through VmRepository: the same answers as load, pages
 * of streams per read, and the fold cache used and kept up to date as load does.
 */
describe('AggregateRepository.loadMany', () => {
  let pool: Pool;
  let store: PostgresEventStore;
  let schema: string;
  const codec = new DomainEventCodec(createHcpUpcasters());

  beforeAll(async () => {
    pool = new Pool({ connectionString: DATABASE_URL, max: 4 });
    schema = `agg_test_${randomBytes(6).toString('hex')}`;
    await installPostgresEventStoreSchema(pool, schema);
    store = new PostgresEventStore({ pool, schema });
  });

  afterAll(async () => {
    await store?.close();
    if (schema) await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await pool?.end();
  });

  const createData = (id: string): VmCreateRequestedData => ({
    vm_id: id,
    project_id: 'agg',
    job_id: randomUUID(),
    name: `vm-${id.slice(0, 8)}`,
    zone: 'local',
    image_id: 'img',
    flavor_id: 'small',
    resources: { vcpus: 1, ram_mb: 512, disk_gb: 10 },
    placement: { provider_id: 'prov', cluster_id: 'cluster', image_ref: 'tmpl' },
    tags: {},
    metadata: {},
    ssh_keys: [],
    power_on: true,
  });

  /** `count` VMs whose create was requested, written in one appendMany; every other one also created. */
  async function requestedVms(count: number): Promise<string[]> {
    const writer = new VmRepository(store, codec);
    const ctx = eventContext('tester', randomUUID());
    const ids = Array.from({ length: count }, () => randomUUID());
    await store.appendMany(
      ids.map((id) => writer.opening(id, decideVm(null, { type: 'create', data: createData(id) }), ctx, 'no_stream')),
    );
    for (const id of ids.filter((_, i) => i % 2 === 1)) await succeed(writer, id);
    return ids;
  }

  async function succeed(repository: VmRepository, id: string): Promise<void> {
    await repository.update(
      id,
      (s) =>
        recordVmOutcome(s, {
          type: 'succeeded',
          job_id: s!.pending_job_id!,
          operation: 'create',
          power_state: 'running',
          addresses: [],
        }),
      eventContext('tester', randomUUID()),
    );
  }

  it('answers each id as load does, in the order given, an absent one as no stream', async () => {
    const ids = [...(await requestedVms(6)), randomUUID()];
    const order = [ids[3]!, ids[6]!, ids[0]!, ids[5]!, ids[1]!, ids[2]!, ids[4]!];

    const many = await new VmRepository(store, codec).loadMany(order);

    const one = new VmRepository(store, codec);
    expect(many).toEqual(await Promise.all(order.map((id) => one.load(id))));
    expect(many[1]).toEqual({ id: ids[6], state: null, revision: 'no_stream' });
    expect(many.map((l) => l.state?.status)).toEqual([
      'running',
      undefined,
      'provisioning',
      'running',
      'running',
      'provisioning',
      'provisioning',
    ]);
  });

  it('reads more ids than a page with one batch read per page, every aggregate complete', async () => {
    const ids = await requestedVms(1_100);
    const recording = new ReadRecordingStore(store);

    const loaded = await new VmRepository(recording.wrapped(), codec).loadMany(ids);

    expect(recording.batches.map((b) => b.length)).toEqual([500, 500, 100]);
    expect(recording.singles).toEqual([]);
    expect(loaded.map((l) => l.id)).toEqual(ids);
    expect(loaded.filter((l, i) => l.revision !== (i % 2 === 1 ? 1n : 0n) || l.state?.id !== ids[i])).toEqual([]);
  }, 60_000);

  it('reads a remembered aggregate from after its remembered revision, and sees what was appended since', async () => {
    const [cachedId, freshId] = await requestedVms(2);
    const recording = new ReadRecordingStore(store);
    const reader = new VmRepository(recording.wrapped(), codec);
    const before = await reader.load(cachedId!);
    await succeed(new VmRepository(store, codec), cachedId!);

    const [cached, fresh] = await reader.loadMany([cachedId!, freshId!]);

    expect(recording.batches.at(-1)).toEqual([
      { streamId: `vm-${cachedId}`, fromRevision: (before.revision as bigint) + 1n },
      { streamId: `vm-${freshId}`, fromRevision: undefined },
    ]);
    expect(cached).toEqual(await new VmRepository(store, codec).load(cachedId!));
    expect(cached!.state?.status).toBe('running');
    expect(fresh!.revision).toBe(1n); // its create succeeded too
  });

  it('remembers what it loaded, so the next load reads only the events after it', async () => {
    const [id] = await requestedVms(1);
    const recording = new ReadRecordingStore(store);
    const reader = new VmRepository(recording.wrapped(), codec);

    const [loaded] = await reader.loadMany([id!]);
    await reader.load(id!);

    expect(recording.singles).toEqual([
      { streamId: `vm-${id}`, options: { fromRevision: (loaded!.revision as bigint) + 1n } },
    ]);
  });

  it('answers an id given twice at both places, reading its stream once', async () => {
    const [a, b] = await requestedVms(2);
    const recording = new ReadRecordingStore(store);

    const loaded = await new VmRepository(recording.wrapped(), codec).loadMany([a!, b!, a!]);

    expect(loaded.map((l) => l.id)).toEqual([a, b, a]);
    expect(loaded[2]).toEqual(loaded[0]);
    expect(recording.batches.map((batch) => batch.map((r) => r.streamId))).toEqual([[`vm-${a}`, `vm-${b}`]]);
  });

  it('answers an empty list without reading', async () => {
    const recording = new ReadRecordingStore(store);

    await expect(new VmRepository(recording.wrapped(), codec).loadMany([])).resolves.toEqual([]);
    expect(recording.batches).toEqual([]);
  });

  it('rejects when one of the streams cannot be decoded', async () => {
    const [good] = await requestedVms(1);
    const bad = randomUUID();
    await store.append(
      `vm-${bad}`,
      [{ id: randomUUID(), type: 'VmCreateRequested', data: { vm_id: bad } }],
      'no_stream',
    );

    await expect(new VmRepository(store, codec).loadMany([good!, bad])).rejects.toThrow();
  });
});
