export * from './vsphere.driver';
export {
  parseVsphereCredentials,
  parseVsphereEndpoint,
  parseVsphereSettings,
  type VsphereSettings,
} from './vsphere-config';
export { DEFAULT_VSPHERE_TIMING, type VsphereTiming } from './vsphere-cluster';
export { VsphereFaultError } from './vsphere-faults';
