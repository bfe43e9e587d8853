// The projections administration as other contexts see it: where they register their process managers.
export { ProjectionsAdminModule } from './projections-admin.module';
export { ProjectionHost } from './projection-host';
