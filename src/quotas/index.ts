// The quotas context as other contexts see it.
export { QuotasModule } from './quotas.module';
export { QuotaService } from './quota.service';
