import { z } from 'zod/v4';
import { errorShapeSchema } from '../errors.schema';
import { EventSchema, idSchema, schemaFor } from '../events/event-schemas';
import { JobFactValue, jobFactProblem } from './job-facts';
import {
  JOB_RECOVERY_ACTIONS,
  JOB_RECOVERY_REASON_MAX,
  JOB_TYPES,
  JobAttemptFailed,
  JobAttemptReleased,
  JobEventType,
  JobFactRecorded,
  JobFailed,
  JobQueued,
  JobRecovered,
  JobStarted,
  JobSucceeded,
} from './job.events';

const attempt = z.number().int().nonnegative();
const jsonValue: z.ZodType<JobFactValue> = z.lazy(() =>
  z.union([z.null(), z.boolean(), z.number(), z.string(), z.array(jsonValue), z.record(z.string(), jsonValue)]),
);

/** The runtime schema of every job event at its current version (see JOB_EVENT_VERSIONS). */
export const JOB_EVENT_SCHEMAS = {
  JobQueued: schemaFor<JobQueued>()(
    z.object({
      job_id: idSchema,
      project_id: idSchema,
      type: z.enum(JOB_TYPES),
      resource_id: idSchema,
      trace_id: z.string(),
      actor: z.string(),
      params: z.record(z.string(), z.unknown()),
      deadline: z.string().nullable().optional(),
    }),
  ),
  JobStarted: schemaFor<JobStarted>()(z.object({ attempt, worker: z.string() })),
  JobAttemptFailed: schemaFor<JobAttemptFailed>()(z.object({ attempt, error: errorShapeSchema, retry_at: z.string() })),
  JobSucceeded: schemaFor<JobSucceeded>()(z.object({ attempt })),
  JobFailed: schemaFor<JobFailed>()(z.object({ attempt, error: errorShapeSchema })),
  JobAttemptReleased: schemaFor<JobAttemptReleased>()(
    z.object({ attempt, worker: z.string(), reason: z.literal('worker_stopping') }),
  ),
  JobRecovered: schemaFor<JobRecovered>()(
    z.object({
      action: z.enum(JOB_RECOVERY_ACTIONS),
      reason: z.string().min(1).max(JOB_RECOVERY_REASON_MAX),
      previous_status: z.enum(['queued', 'running', 'succeeded', 'failed']),
      deadline: z.string().nullable(),
    }),
  ),
  JobFactRecorded: schemaFor<JobFactRecorded>()(
    z.object({ attempt, key: z.string(), value: jsonValue }).superRefine((data, ctx) => {
      const problem = jobFactProblem(data.key, data.value);
      if (problem) ctx.addIssue({ code: 'custom', message: problem, path: ['value'] });
    }),
  ),
} satisfies Record<JobEventType, EventSchema>;
