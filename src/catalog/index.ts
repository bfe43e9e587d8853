// The catalog context as other contexts see it.
export { CatalogModule } from './catalog.module';
export { CatalogService } from './catalog.service';
export { LOCAL_ZONE, seedEmbeddedDefault, seededId } from './catalog-seed';
