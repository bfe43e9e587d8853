// The VM context as other contexts see it.
export { VmsModule } from './vms.module';
export { VmRepository } from './vm.repository';
