/**
 * The error taxonomy of API.md. Every failure that can reach a client is a value of this type, from the
 * domain up to the HTTP filter and into `job.error`; the HTTP status is derived, never chosen ad hoc.
 */
export const ERROR_CODES = [
  'INVALID_REQUEST',
  'UNSUPPORTED_MEDIA_TYPE',
  'UNAUTHORIZED',
  'FORBIDDEN',
  'NOT_FOUND',
  'CONFLICT',
  'QUOTA_EXCEEDED',
  'FEATURE_NOT_SUPPORTED',
  'RATE_LIMITED',
  'PROVIDER_UNAVAILABLE',
  'PROVIDER_TIMEOUT',
  'INTERNAL_ERROR',
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

export const HTTP_STATUS_OF: Record<ErrorCode, number> = {
  INVALID_REQUEST: 400,
  // Its own code, as each code has one status: the body was not read, so nothing in it was found wrong.
  UNSUPPORTED_MEDIA_TYPE: 415,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  CONFLICT: 409,
  QUOTA_EXCEEDED: 403,
  FEATURE_NOT_SUPPORTED: 422,
  RATE_LIMITED: 429,
  PROVIDER_UNAVAILABLE: 503,
  PROVIDER_TIMEOUT: 504,
  INTERNAL_ERROR: 500,
};

/** Codes worth another attempt of the same job: the provider may answer next time. */
const RETRYABLE: ReadonlySet<ErrorCode> = new Set(['PROVIDER_UNAVAILABLE', 'PROVIDER_TIMEOUT', 'RATE_LIMITED']);

export interface HcpErrorShape {
  code: ErrorCode;
  message: string;
  details?: Record<string, unknown>;
  retryable: boolean;
}

/**
 * Thrown (or returned) inside HCP; the HTTP layer renders it as the envelope, the job worker stores it
 * as `job.error`. Messages are written for the caller and must never carry credentials or provider
 * internals that tenants may not see.
 */
export class HcpError extends Error {
  readonly code: ErrorCode;
  readonly details?: Record<string, unknown>;
  readonly retryable: boolean;

  constructor(code: ErrorCode, message: string, details?: Record<string, unknown>, retryable?: boolean) {
    super(message);
    this.name = 'HcpError';
    this.code = code;
    this.details = details;
    this.retryable = retryable ?? RETRYABLE.has(code);
  }

  get httpStatus(): number {
    return HTTP_STATUS_OF[this.code];
  }

  toShape(): HcpErrorShape {
    return {
      code: this.code,
      message: this.message,
      ...(this.details ? { details: this.details } : {}),
      retryable: this.retryable,
    };
  }

  static fromShape(shape: HcpErrorShape): HcpError {
    return new HcpError(shape.code, shape.message, shape.details, shape.retryable);
  }
}

export const invalidRequest = (message: string, details?: Record<string, unknown>) =>
  new HcpError('INVALID_REQUEST', message, details);
/** A request field that is wrong, in the same `details.fields` shape the input validation uses. */
export const invalidField = (field: string, message: string, extra?: Record<string, unknown>) =>
  new HcpError('INVALID_REQUEST', message, { fields: [{ field, problems: [message] }], ...extra });
export const notFound = (what: string) => new HcpError('NOT_FOUND', `${what} not found`);
export const conflict = (message: string, details?: Record<string, unknown>) =>
  new HcpError('CONFLICT', message, details);
export const providerUnavailable = (message: string, details?: Record<string, unknown>) =>
  new HcpError('PROVIDER_UNAVAILABLE', message, details);
export const providerTimeout = (message: string, details?: Record<string, unknown>) =>
  new HcpError('PROVIDER_TIMEOUT', message, details);
export const internalError = (message = 'internal error') => new HcpError('INTERNAL_ERROR', message);

/** Anything not already in the taxonomy becomes INTERNAL_ERROR without leaking its message. */
export function toHcpError(err: unknown): HcpError {
  return err instanceof HcpError ? err : internalError();
}
