import { z } from 'zod/v4';
import { errorShapeSchema } from '../errors.schema';
import { EventSchema, idSchema, schemaFor } from '../events/event-schemas';
import {
  VmCreateRequested,
  VmDeleted,
  VmDeleteRequested,
  VmEventType,
  VmLabelsUpdated,
  VmOperationFailed,
  VmProvisioned,
  VmRebooted,
  VmRebootRequested,
  VmStarted,
  VmStartRequested,
  VmStateObserved,
  VmVanished,
  VmStopped,
  VmStopRequested,
} from './vm.events';

const labels = z.record(z.string(), z.string());
const address = z.object({ type: z.enum(['ipv4', 'ipv6']), address: z.string(), nic: z.string() });
const count = z.number().int().nonnegative();
const status = z.enum([
  'provisioning',
  'starting',
  'running',
  'stopping',
  'stopped',
  'rebooting',
  'deleting',
  'deleted',
  'error',
]);

/** The runtime schema of every VM event at its current version (see VM_EVENT_VERSIONS). */
export const VM_EVENT_SCHEMAS = {
  VmCreateRequested: schemaFor<VmCreateRequested>()(
    z.object({
      vm_id: idSchema,
      job_id: idSchema,
      project_id: idSchema,
      name: z.string().min(1),
      zone: z.string(),
      image_id: z.string(),
      flavor_id: z.string(),
      resources: z.object({ vcpus: count, ram_mb: count, disk_gb: count }),
      placement: z.object({ provider_id: z.string(), cluster_id: z.string(), image_ref: z.string() }),
      tags: labels,
      metadata: labels,
      ssh_keys: z.array(z.string()),
      user_data: z.string().optional(),
      power_on: z.boolean(),
    }),
  ),
  VmProvisioned: schemaFor<VmProvisioned>()(
    z.object({
      job_id: idSchema,
      power_state: z.enum(['running', 'stopped']),
      addresses: z.array(address),
      provider_ref: z.record(z.string(), z.unknown()),
    }),
  ),
  VmStartRequested: schemaFor<VmStartRequested>()(z.object({ job_id: idSchema, project_id: idSchema })),
  VmStarted: schemaFor<VmStarted>()(z.object({ job_id: idSchema, addresses: z.array(address) })),
  VmStopRequested: schemaFor<VmStopRequested>()(
    z.object({ job_id: idSchema, project_id: idSchema, force: z.boolean() }),
  ),
  VmStopped: schemaFor<VmStopped>()(z.object({ job_id: idSchema })),
  VmRebootRequested: schemaFor<VmRebootRequested>()(
    z.object({ job_id: idSchema, project_id: idSchema, force: z.boolean() }),
  ),
  VmRebooted: schemaFor<VmRebooted>()(z.object({ job_id: idSchema, addresses: z.array(address) })),
  VmDeleteRequested: schemaFor<VmDeleteRequested>()(z.object({ job_id: idSchema, project_id: idSchema })),
  VmDeleted: schemaFor<VmDeleted>()(z.object({ job_id: idSchema })),
  VmOperationFailed: schemaFor<VmOperationFailed>()(
    z.object({
      job_id: idSchema,
      operation: z.enum(['create', 'start', 'stop', 'reboot', 'delete']),
      error: errorShapeSchema,
      status_after: z.enum(['running', 'stopped', 'error']),
    }),
  ),
  VmLabelsUpdated: schemaFor<VmLabelsUpdated>()(z.object({ tags: labels, metadata: labels })),
  VmStateObserved: schemaFor<VmStateObserved>()(
    z.object({
      project_id: idSchema,
      power_state: z.enum(['running', 'stopped']),
      addresses: z.array(address),
      previous_status: status,
      cause: z.enum(['reconcile', 'adopted']),
    }),
  ),
  VmVanished: schemaFor<VmVanished>()(
    z.object({ project_id: idSchema, previous_status: status, reason: z.literal('vanished_at_provider') }),
  ),
} satisfies Record<VmEventType, EventSchema>;
