import { z } from 'zod/v4';
import { ERROR_CODES, HcpErrorShape } from './errors';

/** An error as events record it (job and VM failures): a taxonomy code, never a free-form one. */
export const errorShapeSchema: z.ZodType<HcpErrorShape, unknown> = z.object({
  code: z.enum(ERROR_CODES),
  message: z.string(),
  details: z.record(z.string(), z.unknown()).optional(),
  retryable: z.boolean(),
});
