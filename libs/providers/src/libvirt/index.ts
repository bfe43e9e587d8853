export { LibvirtDriver, type LibvirtDriverOptions } from './libvirt-driver';
export { VirshError } from './libvirt-errors';
