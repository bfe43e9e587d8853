import { Module, OnModuleInit } from '@nestjs/common';
import { ProjectionHost, ProjectionsAdminModule } from '../projections-admin';
import { OpsQuotasController } from './ops-quotas.controller';
import { QuotaReleaseProjection } from './quota-release.projection';
import { QuotaRepository } from './quota.repository';
import { QuotaService } from './quota.service';
import { QuotasController } from './quotas.controller';

/** Per-project quotas: reserved when a VM is requested, released from the VM's events, set by ops. */
@Module({
  imports: [ProjectionsAdminModule],
  controllers: [QuotasController, OpsQuotasController],
  providers: [QuotaRepository, QuotaService],
  exports: [QuotaService],
})
export class QuotasModule implements OnModuleInit {
  constructor(
    private readonly quotas: QuotaService,
    private readonly projections: ProjectionHost,
  ) {}

  onModuleInit(): void {
    this.projections.registerProcessManager(new QuotaReleaseProjection(this.quotas));
  }
}
