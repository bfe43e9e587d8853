import { Controller, Get, Param } from '@nestjs/common';
import { QuotaView } from './quota.presenter';
import { QuotaService } from './quota.service';
import { ProjectIdPipe } from '../http/validation/path-params';

/** A project's quota as its tenants see it: limits (null: none set) and current usage. */
@Controller('v1/projects/:project_id/quotas')
export class QuotasController {
  constructor(private readonly quotas: QuotaService) {}

  @Get()
  get(@Param('project_id', ProjectIdPipe) projectId: string): Promise<QuotaView> {
    return this.quotas.view(projectId);
  }
}
