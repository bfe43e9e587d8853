import { CatalogController } from './tenant/catalog.controller';
import { HealthController } from './health/health.controller';
import { JobsController } from './tenant/jobs.controller';
import { VmsController } from './tenant/vms.controller';

/** Every controller of the API; the route-policy test walks this list. */
export const CONTROLLERS = [HealthController, CatalogController, VmsController, JobsController];
