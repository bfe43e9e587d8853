export * from './proxmox-config';
export * from './proxmox-errors';
export * from './proxmox-format';
export * from './proxmox-tls';
export * from './proxmox-client';
export * from './proxmox.driver';
