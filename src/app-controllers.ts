import { CatalogController } from './catalog/catalog.controller';
import { HealthController } from './platform/health/health.controller';
import { JobsController } from './jobs/jobs.controller';
import { VmsController } from './vms/vms.controller';
import { MetricsController } from './platform/observability/metrics.controller';
import { ClustersController } from './ops/api/clusters.controller';
import { OpsFlavorsController } from './ops/api/flavors.controller';
import { OpsImagesController } from './ops/api/images.controller';
import { OpsWorkloadController } from './vms/ops-vms.controller';
import { ProvidersController } from './ops/api/providers.controller';
import { ZonesController } from './ops/api/zones.controller';
import { OpsQuotasController } from './quotas/ops-quotas.controller';
import { AuditController, MeteringController } from './audit/audit.controller';
import { ProjectionsController } from './projections-admin/projections.controller';
import { QuotasController } from './quotas/quotas.controller';
import { ConsoleSessionsController } from './console/console-sessions.controller';
import { WebconsoleController } from './console/webconsole.controller';

/** Every controller of the API; the route-policy test walks this list. */
export const CONTROLLERS = [
  HealthController,
  MetricsController,
  CatalogController,
  VmsController,
  JobsController,
  QuotasController,
  ConsoleSessionsController,
  WebconsoleController,
  ProvidersController,
  ClustersController,
  ZonesController,
  OpsImagesController,
  OpsFlavorsController,
  OpsWorkloadController,
  OpsQuotasController,
  AuditController,
  MeteringController,
  ProjectionsController,
];
