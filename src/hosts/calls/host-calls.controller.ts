import { Body, Controller, HttpCode, Inject, Param, ParseUUIDPipe, Post, Req } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { HttpRequest as Request } from '../../http/edge/http-types';
import { conflict } from '@hcp/domain';
import {
  type ClaimedHostCall,
  claimRequestSchema,
  type HostCallOutcome,
  type HostPrincipal,
  hostCallOutcomeSchema,
} from '@hcp/host-protocol';
import { HcpConfig } from '../../config/hcp-config';
import { HCP_CONFIG } from '../../platform/tokens';
import { CurrentHost } from '../internal/host.guard';
import { HostCallQueue } from './host-call-queue';
import { parseBody } from './zod-body';

/**
 * The internal routes a host agent runs HCP's driver calls through: claim (long poll), renew, outcome.
 * The guard has verified the host credential; every query here is scoped to that host, so one host can
 * neither see nor settle another host's calls (it gets the same 409 as for a call that does not exist).
 */
@ApiExcludeController()
@Controller('internal/v1/calls')
export class HostCallsController {
  constructor(
    private readonly calls: HostCallQueue,
    @Inject(HCP_CONFIG) private readonly config: HcpConfig,
  ) {}

  @Post('claim')
  @HttpCode(200)
  async claim(
    @CurrentHost() host: HostPrincipal,
    @Body() body: unknown,
    @Req() req: Request,
  ): Promise<{ calls: ClaimedHostCall[] }> {
    const { wait_ms, max } = parseBody(claimRequestSchema, body);
    const { callLeaseMs, callPollMs } = this.config.hosts;
    // The agent hung up (or its proxy did): stop waiting for it, it will ask again.
    const gone = new AbortController();
    req.socket.once('close', () => gone.abort());
    const until = Date.now() + wait_ms;
    for (;;) {
      // Nothing is claimed for an agent that hung up: the calls would wait out a lease nobody renews.
      if (gone.signal.aborted) return { calls: [] };
      const claimed = await this.calls.claim(host.host_id, max, callLeaseMs);
      const left = until - Date.now();
      if (claimed.length > 0 || left <= 0) return { calls: claimed };
      await this.calls.waitForChange(`host:${host.host_id}`, Math.min(callPollMs, left), gone.signal);
    }
  }

  @Post(':id/renew')
  @HttpCode(200)
  async renew(
    @CurrentHost() host: HostPrincipal,
    @Param('id', new ParseUUIDPipe()) id: string,
  ): Promise<{ lease_ms: number }> {
    const leaseMs = this.config.hosts.callLeaseMs;
    if (!(await this.calls.renew(host.host_id, id, leaseMs))) throw notHeld(id);
    return { lease_ms: leaseMs };
  }

  @Post(':id/outcome')
  @HttpCode(204)
  async outcome(
    @CurrentHost() host: HostPrincipal,
    @Param('id', new ParseUUIDPipe()) id: string,
    @Body() body: unknown,
  ): Promise<void> {
    const outcome = parseBody(hostCallOutcomeSchema, body) as HostCallOutcome;
    if (!(await this.calls.report(host.host_id, id, outcome))) throw notHeld(id);
  }
}

const notHeld = (id: string) =>
  conflict(`host call ${id} is not held by this host (taken again, finished, or unknown)`);
