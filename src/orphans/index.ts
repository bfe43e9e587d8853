// The orphans context as other contexts see it.
export { OrphansModule } from './orphans.module';
