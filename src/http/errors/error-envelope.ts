import { HttpException, HttpStatus } from '@nestjs/common';
import { ErrorCode, HcpError, internalError } from '@hcp/domain';
import { outageOf } from '../../platform/availability/unavailable-error';

export interface ErrorEnvelope {
  error: { code: ErrorCode; message: string; details?: Record<string, unknown>; trace_id: string };
}

/** Framework exceptions (unknown route, auth, Fastify's own refusals) mapped onto the taxonomy by status. */
const CODE_OF_STATUS: Partial<Record<number, ErrorCode>> = {
  [HttpStatus.BAD_REQUEST]: 'INVALID_REQUEST',
  [HttpStatus.UNAUTHORIZED]: 'UNAUTHORIZED',
  [HttpStatus.FORBIDDEN]: 'FORBIDDEN',
  [HttpStatus.NOT_FOUND]: 'NOT_FOUND',
  [HttpStatus.METHOD_NOT_ALLOWED]: 'NOT_FOUND',
  [HttpStatus.CONFLICT]: 'CONFLICT',
  [HttpStatus.PAYLOAD_TOO_LARGE]: 'INVALID_REQUEST',
  [HttpStatus.UNSUPPORTED_MEDIA_TYPE]: 'INVALID_REQUEST',
  [HttpStatus.TOO_MANY_REQUESTS]: 'RATE_LIMITED',
};

const MESSAGE_OF_CODE: Partial<Record<ErrorCode, string>> = {
  UNAUTHORIZED: 'a valid bearer token is required',
  NOT_FOUND: 'no such resource',
};

/**
 * Any thrown value as a taxonomy error; unknown errors never leak their message. A database or event
 * store that cannot be reached is an outage (503 with Retry-After), not a fault of HCP (500).
 */
export function toTaxonomyError(err: unknown): HcpError {
  if (err instanceof HcpError) return err;
  if (err instanceof HttpException) return fromStatus(err.getStatus(), err.message);
  const outage = outageOf(err);
  if (outage) return outage;
  const status =
    (err as { status?: unknown; statusCode?: unknown })?.status ?? (err as { statusCode?: unknown })?.statusCode;
  // Fastify's own refusals (FST_ERR_*) say what was wrong with the request; no other message is echoed.
  if (typeof status === 'number')
    return fromStatus(
      status,
      String((err as { code?: unknown }).code).startsWith('FST_') ? (err as Error).message : undefined,
    );
  return internalError();
}

function fromStatus(status: number, message?: string): HcpError {
  const code = CODE_OF_STATUS[status];
  if (!code) return internalError();
  return new HcpError(code, MESSAGE_OF_CODE[code] ?? message ?? code.toLowerCase().replace('_', ' '));
}

export function envelopeOf(error: HcpError, traceId: string): ErrorEnvelope {
  return {
    error: {
      code: error.code,
      message: error.message,
      ...(error.details ? { details: error.details } : {}),
      trace_id: traceId,
    },
  };
}
