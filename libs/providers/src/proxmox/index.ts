export * from './proxmox-config';
export * from './proxmox-errors';
export * from './proxmox-format';
export * from './proxmox-client';
export { apiPath, encodeParams, type ProxmoxMethod, type ProxmoxParams } from './proxmox-http';
export { DEFAULT_PROXMOX_TIMING, type ProxmoxTiming } from './proxmox-cluster';
export * from './proxmox.driver';
