import { Controller, HttpCode, Param, Post, Req, Res } from '@nestjs/common';
import type { HttpReply as Response } from '../http/edge/http-types';
import { Principal } from '@hcp/auth';
import { CurrentPrincipal } from '../http/auth/access.guard';
import { IdempotentRequest } from '../http/idempotency/idempotency.interceptor';
import { traceIdOf } from '../http/request/request-id';
import { UuidPipe } from '../http/validation/path-params';
import { JobAccepted } from '../jobs';
import { ReconcileRequester } from './reconcile-request';

/** Ops ask HCP to compare one VM with its provider now, instead of waiting for the next pass. */
@Controller('v1/ops/vms')
export class ReconcileController {
  constructor(private readonly requester: ReconcileRequester) {}

  /** 202 with the `vm.reconcile` job; its address (in the VM's project) in `Location`. */
  @Post(':id/reconcile')
  @HttpCode(202)
  async reconcile(
    @Param('id', UuidPipe) vmId: string,
    @CurrentPrincipal() who: Principal,
    @Req() req: IdempotentRequest,
    @Res({ passthrough: true }) res: Response,
  ): Promise<JobAccepted> {
    const { project_id, ...accepted } = await this.requester.request(vmId, {
      actor: who.sub,
      traceId: traceIdOf(req),
      ...(req.idempotencyKey ? { idempotencyKey: req.idempotencyKey } : {}),
    });
    res.header('Location', `/v1/projects/${encodeURIComponent(project_id)}/jobs/${accepted.job_id}`);
    return accepted;
  }
}
