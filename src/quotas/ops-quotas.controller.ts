import { Body, Controller, HttpCode, Param, Put, Req } from '@nestjs/common';
import type { HttpRequest as Request } from '../http/edge/http-types';
import { Principal } from '@hcp/auth';
import { eventContext } from '../platform/event-sourcing/event-context';
import { QuotaView } from './quota.presenter';
import { QuotaService } from './quota.service';
import { CurrentPrincipal } from '../http/auth/access.guard';
import { traceIdOf } from '../http/request/request-id';
import { ProjectIdPipe } from '../http/validation/path-params';
import { SetQuotaDto } from './quota.dto';

/** Ops set a project's quota (cloud-operator); the answer is the quota with its current usage. */
@Controller('v1/ops/projects/:project_id/quotas')
export class OpsQuotasController {
  constructor(private readonly quotas: QuotaService) {}

  @Put()
  @HttpCode(200)
  set(
    @Param('project_id', ProjectIdPipe) projectId: string,
    @Body() body: SetQuotaDto,
    @CurrentPrincipal() who: Principal,
    @Req() req: Request,
  ): Promise<QuotaView> {
    const limits = { instances: body.instances, vcpus: body.vcpus, ram_mb: body.ram_mb, disk_gb: body.disk_gb };
    return this.quotas.setLimits(projectId, limits, eventContext(who.sub, traceIdOf(req)));
  }
}
