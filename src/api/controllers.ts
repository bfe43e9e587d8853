import { CatalogController } from './tenant/catalog.controller';
import { HealthController } from './health/health.controller';
import { JobsController } from './tenant/jobs.controller';
import { VmsController } from './tenant/vms.controller';
import { MetricsController } from '../observability/metrics.controller';
import { ClustersController } from './ops/clusters.controller';
import { OpsFlavorsController } from './ops/flavors.controller';
import { OpsImagesController } from './ops/images.controller';
import { OpsWorkloadController } from './ops/ops-workload.controller';
import { ProvidersController } from './ops/providers.controller';
import { ZonesController } from './ops/zones.controller';
import { OpsQuotasController } from './ops/quotas.controller';
import { AuditController, MeteringController } from './ops/audit.controller';
import { ProjectionsController } from './ops/projections.controller';
import { QuotasController } from './tenant/quotas.controller';
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
