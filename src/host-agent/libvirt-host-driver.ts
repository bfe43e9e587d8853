import { LibvirtDriver } from '@hcp/providers';
import type { AgentOptions } from './agent-options';
import type { HostDriver } from './host-driver';

/** The driver this agent runs calls on: libvirt on this host, as the flags describe it. */
export function libvirtHostDriver(options: AgentOptions, clusterId: string): HostDriver {
  return new LibvirtDriver({
    uri: options.libvirtUri,
    pool: options.pool,
    ...(options.network ? { network: options.network } : {}),
    ...(options.vncListen ? { vnc_listen: options.vncListen } : {}),
    // HCP fills provider_ref.provider_id on its side; the agent knows only its cluster.
    provider_id: '',
    cluster_id: clusterId,
  });
}
