import { Capabilities, HcpError, NO_CAPABILITIES } from '@hcp/domain';
import { CallContext, ConsoleType, CreateVmSpec, ProviderConsole, ProviderDriver, VmDescription } from '@hcp/providers';

/** One call a RecordingProviderDriver received: the method, its arguments without the context, and the context. */
export interface RecordedDriverCall {
  method:
    | 'createVm'
    | 'startVm'
    | 'stopVm'
    | 'rebootVm'
    | 'deleteVm'
    | 'describeVm'
    | 'openConsole'
    | 'checkConnectivity';
  args: unknown[];
  ctx: CallContext;
}

export interface RecordingProviderDriverOptions {
  /** The provider type the driver reports (labels metrics and job targets). */
  type?: string;
  capabilities?: Capabilities;
  /** What createVm, startVm, stopVm, rebootVm and describeVm answer, merged over a running VM with no addresses. */
  description?: Partial<VmDescription>;
}

/**
 * A provider driver in memory that records every call and answers as scripted: a fixed VM description,
 * or the error given to `failNext`. For specs of whatever calls a driver, without a provider.
 */
export class RecordingProviderDriver implements ProviderDriver {
  readonly type: string;
  readonly calls: RecordedDriverCall[] = [];
  private readonly failures: unknown[] = [];
  private readonly consoles: ProviderConsole[] = [];

  constructor(private readonly options: RecordingProviderDriverOptions = {}) {
    this.type = options.type ?? 'recording';
  }

  /** The next call (of any method) throws `error`; several calls queue several failures. */
  failNext(error: unknown): this {
    this.failures.push(error);
    return this;
  }

  /** The next openConsole answers `console` (without one queued, openConsole is FEATURE_NOT_SUPPORTED). */
  answerConsole(console: ProviderConsole): this {
    this.consoles.push(console);
    return this;
  }

  capabilities(): Capabilities {
    return this.options.capabilities ?? NO_CAPABILITIES;
  }

  async createVm(spec: CreateVmSpec, ctx: CallContext): Promise<VmDescription> {
    this.called('createVm', [spec], ctx);
    return this.description(spec.hcp_id);
  }

  async startVm(hcpId: string, ctx: CallContext): Promise<VmDescription> {
    this.called('startVm', [hcpId], ctx);
    return this.description(hcpId);
  }

  async stopVm(hcpId: string, force: boolean, ctx: CallContext): Promise<VmDescription> {
    this.called('stopVm', [hcpId, force], ctx);
    return { ...this.description(hcpId), power_state: 'stopped', addresses: [] };
  }

  async rebootVm(hcpId: string, force: boolean, ctx: CallContext): Promise<VmDescription> {
    this.called('rebootVm', [hcpId, force], ctx);
    return this.description(hcpId);
  }

  async deleteVm(hcpId: string, ctx: CallContext): Promise<void> {
    this.called('deleteVm', [hcpId], ctx);
  }

  async describeVm(hcpId: string, ctx: CallContext): Promise<VmDescription | null> {
    this.called('describeVm', [hcpId], ctx);
    return this.description(hcpId);
  }

  async openConsole(hcpId: string, type: ConsoleType, ctx: CallContext): Promise<ProviderConsole> {
    this.called('openConsole', [hcpId, type], ctx);
    const console = this.consoles.shift();
    if (!console) throw new HcpError('FEATURE_NOT_SUPPORTED', `the recording driver has no ${type} console scripted`);
    return console;
  }

  async checkConnectivity(ctx: CallContext): Promise<void> {
    this.called('checkConnectivity', [], ctx);
  }

  /** The methods called, in order (e.g. `['startVm']`). */
  methods(): string[] {
    return this.calls.map((c) => c.method);
  }

  private called(method: RecordedDriverCall['method'], args: unknown[], ctx: CallContext): void {
    this.calls.push({ method, args, ctx });
    if (this.failures.length) throw this.failures.shift();
  }

  private description(hcpId: string): VmDescription {
    return {
      hcp_id: hcpId,
      power_state: 'running',
      addresses: [],
      provider_ref: { provider_id: 'recording', cluster_id: 'recording' },
      ...this.options.description,
    };
  }
}

/**
 * The one method of DriverRegistry a job executor uses, answering `driver` for every (provider, cluster)
 * and recording which were asked for; `failWith` makes the lookup itself throw (a provider deregistered).
 */
export class RecordingDriverLookup {
  readonly lookups: Array<{ provider_id: string; cluster_id: string }> = [];
  private failure: unknown = null;

  constructor(private readonly driver: ProviderDriver) {}

  failWith(error: unknown): this {
    this.failure = error;
    return this;
  }

  async driverFor(providerId: string, clusterId: string): Promise<ProviderDriver> {
    this.lookups.push({ provider_id: providerId, cluster_id: clusterId });
    if (this.failure) throw this.failure;
    return this.driver;
  }
}
