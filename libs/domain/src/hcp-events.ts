import {
  CONSOLE_SESSION_EVENT_VERSIONS,
  ConsoleSessionEvent,
  upcastConsoleSessionClosedV1,
  upcastConsoleSessionRefusedV1,
} from './console/console-session.events';
import { HOST_EVENT_VERSIONS, HostEvent } from './host/host.events';
import { JOB_EVENT_VERSIONS, JobEvent, upcastJobQueuedV1 } from './job/job.events';
import { OPS_EVENT_VERSIONS, OpsResourceEvent } from './ops/ops-resources';
import { ORPHAN_EVENT_VERSIONS, OrphanEvent } from './orphan/orphan.events';
import { QUOTA_EVENT_VERSIONS, QuotaEvent } from './quota/quota.events';
import { REFUSAL_EVENT_VERSIONS, RefusalEvent } from './refusal/refusal.events';
import {
  REQUEST_EVENT_VERSIONS,
  RequestEvent,
  upcastRequestReceivedV1,
  upcastRequestRefusedV1,
} from './security/request.events';
import { SECURITY_EVENT_VERSIONS, SecurityEvent } from './security/security.events';
import { VM_EVENT_VERSIONS, VmEvent } from './vm/vm.events';
import { UpcasterRegistry } from './events/upcasters';

export type HcpEvent =
  | VmEvent
  | JobEvent
  | SecurityEvent
  | OpsResourceEvent
  | QuotaEvent
  | RequestEvent
  | RefusalEvent
  | ConsoleSessionEvent
  | OrphanEvent
  | HostEvent;

/** The current version of every HCP event type. */
export const HCP_EVENT_VERSIONS: Readonly<Record<string, number>> = {
  ...VM_EVENT_VERSIONS,
  ...JOB_EVENT_VERSIONS,
  ...SECURITY_EVENT_VERSIONS,
  ...OPS_EVENT_VERSIONS,
  ...QUOTA_EVENT_VERSIONS,
  ...REQUEST_EVENT_VERSIONS,
  ...REFUSAL_EVENT_VERSIONS,
  ...CONSOLE_SESSION_EVENT_VERSIONS,
  ...ORPHAN_EVENT_VERSIONS,
  ...HOST_EVENT_VERSIONS,
};

/**
 * The upcasters of every HCP event type. A change of shape registers its step here, e.g.
 * `.register('VmStarted', 1, (d) => ({ ...d, new_field: null }))`.
 */
export function createHcpUpcasters(): UpcasterRegistry {
  const registry = new UpcasterRegistry(HCP_EVENT_VERSIONS)
    .register('RequestReceived', 1, upcastRequestReceivedV1)
    .register('RequestRefused', 1, upcastRequestRefusedV1)
    .register('JobQueued', 1, upcastJobQueuedV1);
  return registry
    .register('ConsoleSessionRefused', 1, upcastConsoleSessionRefusedV1)
    .register('ConsoleSessionClosed', 1, upcastConsoleSessionClosedV1);
}
