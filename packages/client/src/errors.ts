/**
 * An answer from HCP that is not a success, or no answer at all. Built from HCP's error envelope
 * (`{ error: { code, message, details?, trace_id } }`, docs/API.md); a body that is not one keeps the
 * HTTP status with code `UNEXPECTED_RESPONSE`, and a request that reached no server is `UNREACHABLE`
 * (status 0).
 */
export class HcpApiError extends Error {
  override readonly name: string = 'HcpApiError';
  readonly status: number;
  /** One of API.md's error codes, or the client's own: UNREACHABLE, UNEXPECTED_RESPONSE, TIMEOUT. */
  readonly code: string;
  readonly details?: unknown;
  /** X-Request-Id of the answer (HCP's trace id), for support and the audit trail. */
  readonly requestId?: string;
  /** Seconds the server asked to wait (Retry-After, on 429 and 503). */
  readonly retryAfterS?: number;

  constructor(init: {
    status: number;
    code: string;
    message: string;
    details?: unknown;
    requestId?: string;
    retryAfterS?: number;
    cause?: unknown;
  }) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.status = init.status;
    this.code = init.code;
    if (init.details !== undefined) this.details = init.details;
    if (init.requestId !== undefined) this.requestId = init.requestId;
    if (init.retryAfterS !== undefined) this.retryAfterS = init.retryAfterS;
  }

  /** The error a non-success answer stands for; `body` is its parsed JSON, if it had any. */
  static fromResponse(response: Response, body: unknown): HcpApiError {
    const requestId = response.headers.get('x-request-id') ?? undefined;
    const retryAfterS = retryAfterSeconds(response.headers.get('retry-after'));
    const envelope = errorOfEnvelope(body);
    if (!envelope)
      return new HcpApiError({
        status: response.status,
        code: 'UNEXPECTED_RESPONSE',
        message: `HTTP ${response.status} without HCP's error envelope`,
        details: body === undefined || body === '' ? undefined : body,
        requestId,
        retryAfterS,
      });
    return new HcpApiError({
      status: response.status,
      code: envelope.code,
      message: envelope.message,
      details: envelope.details,
      requestId: requestId ?? envelope.trace_id,
      retryAfterS,
    });
  }

  /** A request that got no answer: refused connection, DNS failure, reset, TLS failure. */
  static unreachable(url: string, cause: unknown): HcpApiError {
    const reason = isErrorLike(cause) ? (causeMessage(cause) ?? cause.message) : String(cause);
    return new HcpApiError({ status: 0, code: 'UNREACHABLE', message: `no answer from ${url}: ${reason}`, cause });
  }
}

/** waitForJob gave up: the job was still unfinished at the deadline. `job` is the last state seen. */
export class HcpTimeoutError extends HcpApiError {
  override readonly name: string = 'HcpTimeoutError';
  readonly job?: unknown;

  constructor(message: string, job?: unknown) {
    super({ status: 0, code: 'TIMEOUT', message });
    if (job !== undefined) this.job = job;
  }
}

interface EnvelopeError {
  code: string;
  message: string;
  details?: unknown;
  trace_id?: string;
}

function errorOfEnvelope(body: unknown): EnvelopeError | undefined {
  if (!isObject(body) || !isObject(body.error)) return undefined;
  const { code, message, details, trace_id } = body.error;
  if (typeof code !== 'string' || typeof message !== 'string') return undefined;
  return { code, message, details, trace_id: typeof trace_id === 'string' ? trace_id : undefined };
}

/** Retry-After as seconds: delta-seconds, or an HTTP date from now (never negative). */
export function retryAfterSeconds(value: string | null): number | undefined {
  if (value === null || value.trim() === '') return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim());
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - Date.now()) / 1000));
}

// Node's fetch says only "fetch failed"; what happened (ECONNREFUSED, ENOTFOUND...) is in its cause.
function causeMessage(err: ErrorLike): string | undefined {
  const cause = err.cause;
  if (!isErrorLike(cause)) return undefined;
  return typeof cause.code === 'string' ? `${cause.code} (${cause.message})` : cause.message;
}

interface ErrorLike {
  message: string;
  code?: unknown;
  cause?: unknown;
}

// Not instanceof Error: fetch's errors may come from another realm (a worker, a test sandbox).
function isErrorLike(v: unknown): v is ErrorLike {
  return typeof v === 'object' && v !== null && typeof (v as { message?: unknown }).message === 'string';
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
