import type { HostRecord } from '../host.store';
import { STATIC_ENROLLMENT } from '../host.store';

/** A host as ops see it: online when its last heartbeat is younger than the timeout. */
export function presentHost(host: HostRecord, heartbeatTimeoutMs: number, now: Date = new Date()) {
  const last = host.last_heartbeat_at;
  return {
    id: host.id,
    cluster_id: host.cluster_id,
    identity: host.identity,
    hostname: host.hostname,
    state: host.state,
    online: host.state === 'active' && last !== null && now.getTime() - last.getTime() < heartbeatTimeoutMs,
    last_heartbeat_at: last?.toISOString() ?? null,
    capacity: host.capacity,
    capabilities: host.capabilities,
    driver: host.driver,
    agent_version: host.agent_version,
    guests: host.guests,
    /** `static`: configured in HCP_STATIC_HOST_CREDENTIALS (rotated there, not by HCP); else `enrolled`. */
    credential_source: host.enrolled_with === STATIC_ENROLLMENT ? 'static' : 'enrolled',
    enrolled_at: host.enrolled_at.toISOString(),
    credential_rotated_at: host.credential_rotated_at?.toISOString() ?? null,
  };
}
export type HostView = ReturnType<typeof presentHost>;
