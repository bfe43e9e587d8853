export * from './vsphere.driver';
export {
  parseVsphereCredentials,
  parseVsphereEndpoint,
  parseVsphereSettings,
  type VsphereSettings,
} from './vsphere-config';
export { DEFAULT_VSPHERE_TIMING, type VsphereTiming } from './vsphere-cluster';
export { VsphereFaultError } from './vsphere-faults';
export { writeExtraConfig } from './vsphere-extra-config';
export { VsphereClient, type VsphereCredentials } from './vsphere-client';
export { runTask, DEFAULT_TASK_TIMING } from './vsphere-tasks';
export { moref, morefOf } from './soap-envelope';
