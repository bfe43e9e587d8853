import { register } from 'prom-client';
import {
  createHcpUpcasters,
  decideVm,
  foldJob,
  HcpError,
  HcpErrorShape,
  JobStarted,
  JobState,
  jobEvent,
  jobQueuedFor,
  recordVmOutcome,
  VmCommand,
  VmCreateRequestedData,
  VmEvent,
  VmOperation,
  VmOutcome,
  VmRequestEvent,
  vmEvent,
  vmStreamId,
} from '@hcp/domain';
import { DomainEventCodec, InMemoryEventStore } from '@hcp/eventstore';
import { VmAddress } from '@hcp/providers';
import { RecordingDriverLookup, RecordingProviderDriver } from '../../../test/fakes/recording-provider-driver';
import { JOB_WORKER_ACTOR, JobAttempt, JobWork } from '../../jobs';
import { eventContext } from '../../platform/event-sourcing/event-context';
import { HcpMetrics } from '../../platform/observability/hcp-metrics';
import { VmRepository } from '../vm.repository';
import { VmJobExecutor } from './vm-job.executor';

const VM = 'vm-1';
const TRACE = 'trace-1';
const ADDRESSES: VmAddress[] = [{ type: 'ipv4', address: '10.0.0.7', nic: 'net0' }];
const PROVIDER_REF = { provider_id: 'prov-1', cluster_id: 'clu-1', vmid: 104 };
const UNAVAILABLE: HcpErrorShape = {
  code: 'PROVIDER_UNAVAILABLE',
  message: 'the provider did not answer',
  retryable: true,
};

// prom-client registers every metric in its global registry: one HcpMetrics per spec file, reset before each spec.
const metrics = new HcpMetrics();

const creation = (overrides: Partial<VmCreateRequestedData> = {}): VmCreateRequestedData => ({
  vm_id: VM,
  project_id: 'p-1',
  job_id: 'job-create',
  name: 'web-1',
  zone: 'zone-a',
  image_id: 'img-ubuntu',
  flavor_id: 'flv-small',
  resources: { vcpus: 2, ram_mb: 2048, disk_gb: 20 },
  placement: { provider_id: 'prov-1', cluster_id: 'clu-1', image_ref: 'local:vztmpl/ubuntu-24.04' },
  tags: { env: 'prod' },
  metadata: { owner: 'alice' },
  ssh_keys: ['ssh-ed25519 AAAAC3Nz alice@laptop'],
  user_data: '#cloud-config\npackages: [nginx]\n',
  power_on: true,
  ...overrides,
});

describe('VmJobExecutor', () => {
  let store: InMemoryEventStore;
  let codec: DomainEventCodec;
  let vms: VmRepository;
  let driver: RecordingProviderDriver;
  let drivers: RecordingDriverLookup;
  let executor: VmJobExecutor;
  let attempt: JobAttempt;
  let factsRecorded: Array<{ key: string; value: unknown }>;
  /** How many events the VM's stream held when the GIVEN ended. */
  let given = 0;

  beforeEach(() => {
    register.resetMetrics();
    store = new InMemoryEventStore();
    codec = new DomainEventCodec(createHcpUpcasters());
    vms = new VmRepository(store, codec);
    driver = new RecordingProviderDriver({
      type: 'simulator',
      description: { addresses: ADDRESSES, provider_ref: PROVIDER_REF },
    });
    drivers = new RecordingDriverLookup(driver);
    executor = new VmJobExecutor(vms, drivers, metrics);
    attempt = {
      worker: 'worker-a',
      deadline: new Date('2026-03-01T12:00:30.000Z'),
      signal: new AbortController().signal,
      trace_id: TRACE,
      recorded: { 'proxmox.clone': { node: 'pve1', vmid: 104 } },
      record: async (key, value) => {
        factsRecorded.push({ key, value });
      },
    };
    factsRecorded = [];
  });

  // GIVEN ---------------------------------------------------------------------------------------------

  /** Decides a command on the VM through the real repository; returns the running job of the request it made. */
  async function request(command: VmCommand): Promise<JobState> {
    const { events } = await vms.update(VM, (state) => decideVm(state, command), eventContext('alice', TRACE));
    return runningJobOf(events[0] as VmRequestEvent);
  }

  async function outcome(outcome: VmOutcome): Promise<void> {
    await vms.update(VM, (state) => recordVmOutcome(state, outcome), eventContext(JOB_WORKER_ACTOR, TRACE));
  }

  /** The job a request opened, as a worker holds it: queued, then started. */
  function runningJobOf(request: VmRequestEvent): JobState {
    const at = '2026-03-01T12:00:00.000Z';
    const queued = jobQueuedFor(request, VM, { trace_id: TRACE, actor: 'alice' });
    return foldJob([
      { event: queued, at },
      { event: jobEvent<JobStarted>('JobStarted', { attempt: 1, worker: 'worker-a' }), at },
    ])!;
  }

  async function givenVmRequested(overrides: Partial<VmCreateRequestedData> = {}): Promise<JobState> {
    const job = await request({ type: 'create', data: creation(overrides) });
    await markGiven();
    return job;
  }

  async function givenVm(power: 'running' | 'stopped'): Promise<void> {
    await request({ type: 'create', data: creation({ power_on: power === 'running' }) });
    await outcome({
      type: 'succeeded',
      job_id: 'job-create',
      operation: 'create',
      power_state: power,
      addresses: power === 'running' ? ADDRESSES : [],
    });
    await markGiven();
  }

  async function givenRequestOn(power: 'running' | 'stopped', command: VmCommand): Promise<JobState> {
    await givenVm(power);
    const job = await request(command);
    await markGiven();
    return job;
  }

  async function markGiven(): Promise<void> {
    given = (await store.readStream(vmStreamId(VM))).length;
  }

  // THEN ----------------------------------------------------------------------------------------------

  async function vmEventsWritten(): Promise<VmEvent[]> {
    const recorded = await store.readStream(vmStreamId(VM), { fromRevision: BigInt(given) });
    return recorded.map((r) => codec.decode<VmEvent>(r).event);
  }

  /** The driver calls timed in the providerCalls histogram: their labels and how many. */
  async function providerCallsTimed(): Promise<Array<{ labels: object; value: number }>> {
    return (await metrics.providerCalls.get()).values
      .filter((v) => v.metricName === 'hcp_provider_call_duration_seconds_count')
      .map(({ labels, value }) => ({ labels, value }));
  }

  async function done(work: JobWork): Promise<Extract<JobWork, { kind: 'done' }>> {
    expect(work).toMatchObject({ kind: 'done', target: 'simulator' });
    return work as Extract<JobWork, { kind: 'done' }>;
  }

  // ---------------------------------------------------------------------------------------------------

  describe('create', () => {
    it('asks the driver of the placement for the VM as requested: resources, image, tags, ssh keys, user data and power', async () => {
      const job = await givenVmRequested();

      await executor.perform(job, attempt);

      expect(drivers.lookups).toEqual([{ provider_id: 'prov-1', cluster_id: 'clu-1' }]);
      expect(driver.calls).toEqual([
        {
          method: 'createVm',
          args: [
            {
              hcp_id: VM,
              project_id: 'p-1',
              name: 'web-1',
              image_ref: 'local:vztmpl/ubuntu-24.04',
              vcpus: 2,
              ram_mb: 2048,
              disk_gb: 20,
              ssh_keys: ['ssh-ed25519 AAAAC3Nz alice@laptop'],
              user_data: '#cloud-config\npackages: [nginx]\n',
              tags: { env: 'prod' },
              power_on: true,
            },
          ],
          ctx: {
            deadline: attempt.deadline,
            signal: attempt.signal,
            trace_id: TRACE,
            recorded: attempt.recorded,
            record: attempt.record,
          },
        },
      ]);
    });

    it('hands the driver the facts earlier attempts recorded, and the way to record one on the job', async () => {
      const job = await givenVmRequested();

      await executor.perform(job, attempt);

      const { ctx } = driver.calls[0]!;
      expect(ctx.recorded).toEqual({ 'proxmox.clone': { node: 'pve1', vmid: 104 } });
      await ctx.record?.('proxmox.clone', { node: 'pve2', vmid: 105 });
      expect(factsRecorded).toEqual([{ key: 'proxmox.clone', value: { node: 'pve2', vmid: 105 } }]);
    });

    it('leaves user data out of the driver call when the request had none', async () => {
      const job = await givenVmRequested({ user_data: undefined, ssh_keys: [], power_on: false });

      await executor.perform(job, attempt);

      const [spec] = driver.calls[0]!.args as [Record<string, unknown>];
      expect(Object.keys(spec)).not.toContain('user_data');
      expect(spec).toMatchObject({ ssh_keys: [], power_on: false });
    });

    it('records the VM provisioned with the power state, addresses and provider reference the driver answered, and only when asked', async () => {
      const job = await givenVmRequested();

      const work = await done(await executor.perform(job, attempt));
      expect(await vmEventsWritten()).toEqual([]);
      await work.record();

      expect(await vmEventsWritten()).toEqual([
        vmEvent('VmProvisioned', {
          job_id: 'job-create',
          power_state: 'running',
          addresses: ADDRESSES,
          provider_ref: PROVIDER_REF,
        }),
      ]);
      expect((await vms.load(VM)).state).toMatchObject({
        status: 'running',
        pending_job_id: null,
        addresses: ADDRESSES,
      });
    });

    it("commits the job's end it is handed with the outcome, and says so; a second record has nothing to commit it with", async () => {
      const job = await givenVmRequested();
      const closing = {
        streamId: 'job-job-create',
        events: [codec.encode(jobEvent('JobSucceeded', { attempt: 1 }), eventContext(JOB_WORKER_ACTOR, TRACE))],
        expected: 'no_stream' as const,
      };
      const appendMany = jest.spyOn(store, 'appendMany');

      const work = await done(await executor.perform(job, attempt));
      expect(await work.record(() => ({ appends: [closing] }))).toBe(true);
      expect(await work.record(() => ({ appends: [{ ...closing, expected: 0n }] }))).toBe(false);

      expect(appendMany).toHaveBeenCalledTimes(1);
      expect(appendMany.mock.calls[0]![0].map((a) => a.streamId)).toEqual([vmStreamId(VM), 'job-job-create']);
      expect((await store.readStream('job-job-create')).map((r) => r.type)).toEqual(['JobSucceeded']);
    });

    it('records a VM created powered off as stopped', async () => {
      driver = new RecordingProviderDriver({
        type: 'simulator',
        description: { power_state: 'stopped', addresses: [], provider_ref: PROVIDER_REF },
      });
      executor = new VmJobExecutor(vms, new RecordingDriverLookup(driver), metrics);
      const job = await givenVmRequested({ power_on: false });

      await (await done(await executor.perform(job, attempt))).record();

      expect(await vmEventsWritten()).toEqual([
        vmEvent('VmProvisioned', {
          job_id: 'job-create',
          power_state: 'stopped',
          addresses: [],
          provider_ref: PROVIDER_REF,
        }),
      ]);
    });
  });

  describe.each<{
    name: string;
    power: 'running' | 'stopped';
    command: (jobId: string) => VmCommand;
    call: Pick<(typeof driver.calls)[number], 'method' | 'args'>;
    event: (jobId: string) => VmEvent;
  }>([
    {
      name: 'start',
      power: 'stopped',
      command: (job_id) => ({ type: 'start', job_id }),
      call: { method: 'startVm', args: [VM] },
      event: (job_id) => vmEvent('VmStarted', { job_id, addresses: ADDRESSES }),
    },
    {
      name: 'stop',
      power: 'running',
      command: (job_id) => ({ type: 'stop', job_id, force: false }),
      call: { method: 'stopVm', args: [VM, false] },
      event: (job_id) => vmEvent('VmStopped', { job_id }),
    },
    {
      name: 'stop with force',
      power: 'running',
      command: (job_id) => ({ type: 'stop', job_id, force: true }),
      call: { method: 'stopVm', args: [VM, true] },
      event: (job_id) => vmEvent('VmStopped', { job_id }),
    },
    {
      name: 'reboot',
      power: 'running',
      command: (job_id) => ({ type: 'reboot', job_id, force: false }),
      call: { method: 'rebootVm', args: [VM, false] },
      event: (job_id) => vmEvent('VmRebooted', { job_id, addresses: ADDRESSES }),
    },
    {
      name: 'reboot with force',
      power: 'running',
      command: (job_id) => ({ type: 'reboot', job_id, force: true }),
      call: { method: 'rebootVm', args: [VM, true] },
      event: (job_id) => vmEvent('VmRebooted', { job_id, addresses: ADDRESSES }),
    },
    {
      name: 'delete',
      power: 'running',
      command: (job_id) => ({ type: 'delete', job_id }),
      call: { method: 'deleteVm', args: [VM] },
      event: (job_id) => vmEvent('VmDeleted', { job_id }),
    },
  ])('$name', ({ power, command, call, event }) => {
    it('calls the driver of the placement with the VM id, the options of the request and the attempt', async () => {
      const job = await givenRequestOn(power, command('job-2'));

      const work = await executor.perform(job, attempt);

      expect(work).toMatchObject({ kind: 'done', target: 'simulator' });
      expect(drivers.lookups).toEqual([{ provider_id: 'prov-1', cluster_id: 'clu-1' }]);
      expect(driver.calls).toEqual([
        {
          ...call,
          ctx: {
            deadline: attempt.deadline,
            signal: attempt.signal,
            trace_id: TRACE,
            recorded: attempt.recorded,
            record: attempt.record,
          },
        },
      ]);
      expect(await providerCallsTimed()).toEqual([
        { labels: { provider: 'simulator', operation: job.type.slice(3), outcome: 'ok' }, value: 1 },
      ]);
    });

    it('records its outcome on the VM, as the worker on the trace of the job, once however often it is recorded', async () => {
      const job = await givenRequestOn(power, command('job-2'));
      const work = await done(await executor.perform(job, attempt));
      expect(await vmEventsWritten()).toEqual([]);

      await work.record();
      await work.record();

      expect(await vmEventsWritten()).toEqual([event('job-2')]);
      const [recorded] = await store.readStream(vmStreamId(VM), { fromRevision: BigInt(given) });
      expect(codec.decode(recorded!).context).toMatchObject({ actor: JOB_WORKER_ACTOR, trace_id: TRACE });
    });
  });

  describe('a job the VM has settled already', () => {
    it('is settled without an error and without a driver call when the VM recorded its success', async () => {
      const job = await givenRequestOn('stopped', { type: 'start', job_id: 'job-2' });
      await outcome({ type: 'succeeded', job_id: 'job-2', operation: 'start', addresses: ADDRESSES });
      await markGiven();

      const work = await executor.perform(job, attempt);

      expect(work).toEqual({ kind: 'settled', error: null });
      expect(driver.calls).toEqual([]);
      expect(await providerCallsTimed()).toEqual([]);
      expect(await vmEventsWritten()).toEqual([]);
    });

    it('is settled with the error the VM recorded when the VM recorded its failure', async () => {
      const job = await givenRequestOn('stopped', { type: 'start', job_id: 'job-2' });
      await outcome({ type: 'failed', job_id: 'job-2', operation: 'start', error: UNAVAILABLE });
      await markGiven();

      const work = await executor.perform(job, attempt);

      expect(work).toEqual({ kind: 'settled', error: UNAVAILABLE });
      expect(driver.calls).toEqual([]);
    });

    it('is settled without a driver call when a newer request superseded it', async () => {
      const job = await givenRequestOn('stopped', { type: 'start', job_id: 'job-2' });
      await outcome({ type: 'succeeded', job_id: 'job-2', operation: 'start', addresses: ADDRESSES });
      await request({ type: 'stop', job_id: 'job-3', force: false });
      await markGiven();

      const work = await executor.perform(job, attempt);

      expect(work).toEqual({ kind: 'settled', error: null });
      expect(driver.calls).toEqual([]);
      expect(await vmEventsWritten()).toEqual([]);
    });
  });

  describe('a job a newer request superseded', () => {
    it('is settled with the error its own operation ended with, not as a success', async () => {
      const job = await givenRequestOn('running', { type: 'stop', job_id: 'job-2', force: false });
      await outcome({ type: 'failed', job_id: 'job-2', operation: 'stop', error: UNAVAILABLE });
      await request({ type: 'reboot', job_id: 'job-3', force: false });
      await markGiven();

      const work = await executor.perform(job, attempt);

      expect(work).toEqual({ kind: 'settled', error: UNAVAILABLE });
      expect(driver.calls).toEqual([]);
      expect(await vmEventsWritten()).toEqual([]);
    });

    it('is settled as failed with CONFLICT when the VM never recorded an outcome of it', async () => {
      await givenVm('running');
      const orphan = runningJobOf(vmEvent('VmStopRequested', { job_id: 'job-lost', project_id: 'p-1', force: false }));
      await request({ type: 'stop', job_id: 'job-3', force: false });
      await markGiven();

      const work = await executor.perform(orphan, attempt);

      expect(work).toMatchObject({ kind: 'settled', error: { code: 'CONFLICT', retryable: false } });
      expect(driver.calls).toEqual([]);
    });
  });

  describe('a driver call that fails', () => {
    it('is failed work, labelled with the provider type, timed with its taxonomy code, and leaves the VM as it was', async () => {
      const job = await givenRequestOn('running', { type: 'reboot', job_id: 'job-2', force: false });
      const error = new HcpError('PROVIDER_TIMEOUT', 'the provider did not answer in time');
      driver.failNext(error);

      const work = await executor.perform(job, attempt);

      expect(work).toEqual({ kind: 'failed', target: 'simulator', error });
      expect(driver.methods()).toEqual(['rebootVm']);
      expect(await providerCallsTimed()).toEqual([
        { labels: { provider: 'simulator', operation: 'reboot', outcome: 'PROVIDER_TIMEOUT' }, value: 1 },
      ]);
      expect(await vmEventsWritten()).toEqual([]);
    });

    it('hands an error outside the taxonomy to the runner as it is, timed as INTERNAL_ERROR', async () => {
      const job = await givenVmRequested();
      const error = new TypeError('socket hang up');
      driver.failNext(error);

      const work = await executor.perform(job, attempt);

      expect(work).toEqual({ kind: 'failed', target: 'simulator', error });
      expect(await providerCallsTimed()).toEqual([
        { labels: { provider: 'simulator', operation: 'create', outcome: 'INTERNAL_ERROR' }, value: 1 },
      ]);
    });

    it('is failed work for an unknown provider type when the VM has no driver any more', async () => {
      const job = await givenRequestOn('running', { type: 'stop', job_id: 'job-2', force: true });
      const error = new HcpError(
        'PROVIDER_UNAVAILABLE',
        "the VM's provider is not registered any more",
        undefined,
        false,
      );
      drivers.failWith(error);

      const work = await executor.perform(job, attempt);

      expect(work).toEqual({ kind: 'failed', target: 'unknown', error });
      expect(driver.calls).toEqual([]);
      expect(await providerCallsTimed()).toEqual([
        { labels: { provider: 'unknown', operation: 'stop', outcome: 'PROVIDER_UNAVAILABLE' }, value: 1 },
      ]);
    });
  });

  describe('recordFailure', () => {
    it.each<{ operation: VmOperation; given: () => Promise<JobState>; statusAfter: 'running' | 'stopped' | 'error' }>([
      { operation: 'create', given: () => givenVmRequested(), statusAfter: 'error' },
      {
        operation: 'start',
        given: () => givenRequestOn('stopped', { type: 'start', job_id: 'job-2' }),
        statusAfter: 'stopped',
      },
      {
        operation: 'stop',
        given: () => givenRequestOn('running', { type: 'stop', job_id: 'job-2', force: false }),
        statusAfter: 'running',
      },
      {
        operation: 'reboot',
        given: () => givenRequestOn('running', { type: 'reboot', job_id: 'job-2', force: true }),
        statusAfter: 'running',
      },
      {
        operation: 'delete',
        given: () => givenRequestOn('stopped', { type: 'delete', job_id: 'job-2' }),
        statusAfter: 'error',
      },
    ])('leaves the VM of a failed $operation in $statusAfter', async ({ operation, given: givenJob, statusAfter }) => {
      const job = await givenJob();

      await executor.recordFailure(job, UNAVAILABLE);

      // A failed create also removes what the provider made of it, and says so in the cause.
      const error = operation === 'create' ? { ...UNAVAILABLE, details: { cleanup: 'removed' } } : UNAVAILABLE;
      expect(await vmEventsWritten()).toEqual([
        vmEvent('VmOperationFailed', { job_id: job.id, operation, error, status_after: statusAfter }),
      ]);
      expect((await vms.load(VM)).state).toMatchObject({
        status: statusAfter,
        pending_job_id: null,
        last_job_id: job.id,
        last_error: error,
      });
      expect(driver.methods()).toEqual(operation === 'create' ? ['deleteVm'] : []);
    });

    it('removes the VM of a failed create at the provider by its HCP id before the VM records the failure, with its own deadline and signal', async () => {
      const job = { ...(await givenVmRequested()), facts: { 'proxmox.clone': { node: 'pve1', vmid: 104 } } };
      let eventsWhileRemoving: VmEvent[] | null = null;
      const removing = driver.deleteVm.bind(driver);
      driver.deleteVm = async (hcpId, ctx) => {
        eventsWhileRemoving = await vmEventsWritten();
        return removing(hcpId, ctx);
      };
      const before = Date.now();

      await executor.recordFailure(job, UNAVAILABLE);

      expect(eventsWhileRemoving).toEqual([]);
      const [removal] = driver.calls;
      expect(removal).toMatchObject({ method: 'deleteVm', args: [VM] });
      expect(removal.ctx.signal).not.toBe(attempt.signal);
      expect(removal.ctx.signal.aborted).toBe(false);
      expect(removal.ctx.deadline.getTime()).toBeGreaterThan(before);
      expect(removal.ctx.recorded).toEqual(job.facts);
      expect(removal.ctx.record).toBeUndefined();
      expect((await vms.load(VM)).state).toMatchObject({ status: 'error' });
    });

    it('records a removal that failed in the cause, with its reason, and the VM in error all the same', async () => {
      const job = await givenVmRequested();
      driver.failNext(new HcpError('PROVIDER_UNAVAILABLE', 'the provider did not answer the delete'));

      await executor.recordFailure(job, UNAVAILABLE);

      const error = {
        ...UNAVAILABLE,
        details: {
          cleanup: 'failed',
          cleanup_error: { code: 'PROVIDER_UNAVAILABLE', message: 'the provider did not answer the delete' },
        },
      };
      expect(await vmEventsWritten()).toEqual([
        vmEvent('VmOperationFailed', { job_id: job.id, operation: 'create', error, status_after: 'error' }),
      ]);
      expect((await metrics.failedCreateCleanups.get()).values.find((v) => v.labels.outcome === 'failed')?.value).toBe(
        1,
      );
    });

    it('records a removal it could not even ask for (the provider is gone) as failed', async () => {
      const job = await givenVmRequested();
      drivers.failWith(new HcpError('NOT_FOUND', 'provider not found'));

      await executor.recordFailure(job, UNAVAILABLE);

      expect((await vms.load(VM)).state?.last_error?.details).toEqual({
        cleanup: 'failed',
        cleanup_error: { code: 'NOT_FOUND', message: 'provider not found' },
      });
    });

    it('never removes a VM that settled its create already', async () => {
      const job = await givenVmRequested();
      await outcome({
        type: 'succeeded',
        job_id: job.id,
        operation: 'create',
        power_state: 'running',
        addresses: ADDRESSES,
      });
      await markGiven();

      await executor.recordFailure(job, UNAVAILABLE);

      expect(driver.calls).toEqual([]);
      expect(await vmEventsWritten()).toEqual([]);
    });

    it('changes nothing on a VM that settled the job already', async () => {
      const job = await givenRequestOn('stopped', { type: 'start', job_id: 'job-2' });
      await outcome({ type: 'succeeded', job_id: 'job-2', operation: 'start', addresses: ADDRESSES });
      await markGiven();

      await executor.recordFailure(job, UNAVAILABLE);

      expect(await vmEventsWritten()).toEqual([]);
      expect((await vms.load(VM)).state).toMatchObject({ status: 'running', last_error: null });
    });
  });

  describe('reopen (ops retry a failed job)', () => {
    const OPS = eventContext('ops:olga', 'trace-ops');

    it('asks the VM for the same operation again under the same job id, with its options', async () => {
      const job = await givenRequestOn('running', { type: 'stop', job_id: 'job-2', force: true });
      await outcome({ type: 'failed', job_id: 'job-2', operation: 'stop', error: UNAVAILABLE });
      await markGiven();

      await executor.reopen(job, OPS);

      expect(await vmEventsWritten()).toEqual([
        vmEvent('VmStopRequested', { job_id: 'job-2', project_id: 'p-1', force: true }),
      ]);
      expect((await vms.load(VM)).state).toMatchObject({ status: 'stopping', pending_job_id: 'job-2' });
    });

    it('changes nothing when the VM awaits the job already (an earlier recovery reopened it)', async () => {
      const job = await givenRequestOn('running', { type: 'stop', job_id: 'job-2', force: false });

      await executor.reopen(job, OPS);

      expect(await vmEventsWritten()).toEqual([]);
    });

    it('refuses a failed create with CONFLICT: the VM exists', async () => {
      const job = await givenVmRequested();
      await outcome({ type: 'failed', job_id: 'job-create', operation: 'create', error: UNAVAILABLE });
      await markGiven();

      await expect(executor.reopen(job, OPS)).rejects.toMatchObject({ code: 'CONFLICT' });
      expect(await vmEventsWritten()).toEqual([]);
    });

    it('refuses with CONFLICT when the VM cannot take the operation from where it is', async () => {
      const job = await givenRequestOn('running', { type: 'reboot', job_id: 'job-2', force: false });
      await outcome({ type: 'failed', job_id: 'job-2', operation: 'reboot', error: UNAVAILABLE });
      await request({ type: 'stop', job_id: 'job-3', force: false });
      await outcome({ type: 'succeeded', job_id: 'job-3', operation: 'stop', addresses: [] });
      await markGiven();

      await expect(executor.reopen(job, OPS)).rejects.toMatchObject({ code: 'CONFLICT' });
      expect(await vmEventsWritten()).toEqual([]);
    });

    it('refuses with CONFLICT when the VM is deleted', async () => {
      const job = await givenRequestOn('running', { type: 'stop', job_id: 'job-2', force: false });
      await outcome({ type: 'failed', job_id: 'job-2', operation: 'stop', error: UNAVAILABLE });
      await request({ type: 'delete', job_id: 'job-3' });
      await outcome({ type: 'succeeded', job_id: 'job-3', operation: 'delete', addresses: [] });
      await markGiven();

      await expect(executor.reopen(job, OPS)).rejects.toMatchObject({ code: 'CONFLICT' });
    });
  });
});
