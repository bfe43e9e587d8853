import { CONSOLE_EVENT_SCHEMAS } from './console/console.event-schemas';
import { EventSchemaRegistry } from './events/event-schemas';
import { HOST_EVENT_SCHEMAS } from './host/host.event-schemas';
import { JOB_EVENT_SCHEMAS } from './job/job.event-schemas';
import { OPS_EVENT_SCHEMAS } from './ops/ops.event-schemas';
import { ORPHAN_EVENT_SCHEMAS } from './orphan/orphan.event-schemas';
import { QUOTA_EVENT_SCHEMAS } from './quota/quota.event-schemas';
import { REFUSAL_EVENT_SCHEMAS } from './refusal/refusal.event-schemas';
import { REQUEST_EVENT_SCHEMAS, SECURITY_EVENT_SCHEMAS } from './security/security.event-schemas';
import { VM_EVENT_SCHEMAS } from './vm/vm.event-schemas';

/**
 * The schema of every HCP event type at its current version: the event store refuses an append whose
 * data fails it, and a stored event that fails it (after upcasting) is a poison event for its readers.
 * A new event type adds its schema in its context's `*.event-schemas.ts`; a spec fails until it does.
 */
export function createHcpEventSchemas(): EventSchemaRegistry {
  return new EventSchemaRegistry({
    ...VM_EVENT_SCHEMAS,
    ...JOB_EVENT_SCHEMAS,
    ...SECURITY_EVENT_SCHEMAS,
    ...OPS_EVENT_SCHEMAS,
    ...QUOTA_EVENT_SCHEMAS,
    ...REQUEST_EVENT_SCHEMAS,
    ...REFUSAL_EVENT_SCHEMAS,
    ...CONSOLE_EVENT_SCHEMAS,
    ...ORPHAN_EVENT_SCHEMAS,
    ...HOST_EVENT_SCHEMAS,
  });
}
