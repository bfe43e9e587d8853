export { CAPABILITIES as LIBVIRT_CAPABILITIES, LibvirtDriver, type LibvirtDriverOptions } from './libvirt-driver';
export { VirshError } from './libvirt-errors';
export { HCP_XMLNS, serialLogPath } from './domain-xml';
