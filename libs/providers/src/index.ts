export * from './spi/provider-driver';
export * from './simulator/simulator-state';
export * from './simulator/simulator-faults';
export * from './simulator/simulator.driver';
export * from './proxmox';
export * from './rfb';
export * from './libvirt';
export * from './vsphere';
