import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { Inject } from '@nestjs/common';
import { CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import {
  conflict,
  ConsoleSessionOpened,
  ConsoleType,
  decideConsoleSession,
  HcpError,
  missingCapabilities,
  notFound,
} from '@hcp/domain';
import { HcpConfig } from '../config/hcp-config';
import { eventContext } from '../platform/event-sourcing/event-context';
import { HCP_CONFIG } from '../platform/tokens';
import { DriverRegistry } from '../ops';
import { RequestContext } from '../http/request/request-context';
import { VmRepository } from '../vms';
import { ConsoleSessionRepository } from './console-session.repository';
import { consoleBaseOf, consoleOriginsOf, consoleUrlOf } from './console-urls';

export class OpenConsoleSessionCommand {
  constructor(
    readonly projectId: string,
    readonly vmId: string,
    readonly type: ConsoleType,
    /** Where the client says it reached HCP (its Host): used only without a public URL, if allowed. */
    readonly requestOrigin: string,
    readonly ctx: RequestContext,
  ) {}
}

/** API.md's console session answer. The token is in this answer and nowhere else, ever. */
export interface ConsoleSessionView {
  session_id: string;
  type: ConsoleType;
  url: string;
  token: string;
  expires_at: string;
}

/**
 * Opens a console session for a running VM whose zone offers the console type. Nothing touches the
 * provider here: the provider ticket is fetched by the proxy when the token is used, so it is fresh
 * and never stored.
 */
@CommandHandler(OpenConsoleSessionCommand)
export class OpenConsoleSessionHandler implements ICommandHandler<OpenConsoleSessionCommand, ConsoleSessionView> {
  constructor(
    private readonly vms: VmRepository,
    private readonly sessions: ConsoleSessionRepository,
    @Inject(DriverRegistry) private readonly drivers: Pick<DriverRegistry, 'clusterCapabilities'>,
    @Inject(HCP_CONFIG) private readonly config: HcpConfig,
  ) {}

  async execute({ projectId, vmId, type, requestOrigin, ctx }: OpenConsoleSessionCommand): Promise<ConsoleSessionView> {
    // Before anything is decided: a Host HCP does not hand URLs out for opens no session.
    const base = consoleBaseOf(consoleOriginsOf(this.config), requestOrigin);
    const { state: vm } = await this.vms.load(vmId);
    if (!vm || vm.project_id !== projectId || vm.status === 'deleted') throw notFound('VM');
    const offered = await this.drivers.clusterCapabilities(vm.placement.provider_id, vm.placement.cluster_id);
    const missing = missingCapabilities(offered, { console: type });
    if (missing.length)
      throw new HcpError('FEATURE_NOT_SUPPORTED', `the VM's zone does not offer ${type} consoles`, { missing });
    if (vm.status !== 'running')
      throw conflict(`a console needs a running VM; the VM is ${vm.status}`, { status: vm.status });

    const sessionId = randomUUID();
    const token = randomBytes(32).toString('base64url');
    const now = new Date();
    const events = decideConsoleSession(null, {
      type: 'open',
      session_id: sessionId,
      project_id: projectId,
      vm_id: vmId,
      opened_by: ctx.actor,
      console_type: type,
      token_sha256: consoleTokenDigest(token),
      now,
      connect_timeout_ms: this.config.console.connectTimeoutMs,
      max_duration_ms: this.config.console.maxSessionMs,
    });
    await this.sessions.append(
      { id: sessionId, state: null, revision: 'no_stream' },
      events,
      eventContext(ctx.actor, ctx.traceId, now),
    );
    return {
      session_id: sessionId,
      type,
      url: consoleUrlOf(base, sessionId, type, token),
      token,
      expires_at: (events[0] as ConsoleSessionOpened).data.connect_by,
    };
  }
}

/** Only this digest of a token is ever stored or compared. */
export function consoleTokenDigest(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}
