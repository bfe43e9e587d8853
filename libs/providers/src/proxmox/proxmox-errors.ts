/**
 * How Proxmox VE failures become taxonomy errors.
 *
 * Proxmox reports failures in three places: the HTTP status line (its reason phrase is the first line
 * of the message; servers before libpve-http-server-perl 5.2.0 put the message only there), the body
 * (`{"data": null, "message": "...\n", "errors": {"<param>": "<text>"}}`) and, for work done by a
 * worker, the task's exit status. Messages are kept for ops in `details.provider`, which is the one
 * key a tenant-facing view must drop. HcpError messages are written for tenants: they name no provider,
 * node, VMID, storage, template or host (API.md), only what went wrong.
 */
import { HcpError, type ErrorCode } from '@hcp/domain';

/** What Proxmox said, as kept in `details.provider` of an error. */
export interface ProviderDetails {
  /** HTTP status, or a pseudo status 595-599 when pveproxy could not reach the node. */
  status?: number;
  /** The Proxmox message (body `message`, else the reason phrase), or a task's exit status. */
  message?: string;
  /** Per-parameter messages of a 400 "Parameter verification failed." answer. */
  errors?: Record<string, string>;
  /** Which call failed, e.g. `POST /nodes/{node}/qemu/{vmid}/clone`; never with parameter values. */
  operation?: string;
  /** For failed tasks: the task type (qmclone, qmstart, ...) and the last lines of its log. */
  task?: string;
  log?: string[];
  /** For transport failures: the socket / TLS error code (ECONNREFUSED, CERT_HAS_EXPIRED, ...). */
  reason?: string;
}

/**
 * An error answer from the Proxmox API (or a failed task). It is already a taxonomy error; the driver
 * looks at `status` and `providerMessage` to recognise lock timeouts, VMID races and missing VMs.
 */
export class ProxmoxApiError extends HcpError {
  constructor(
    code: ErrorCode,
    message: string,
    readonly status: number,
    readonly providerMessage: string,
    readonly paramErrors: Record<string, string> | undefined,
    details: { provider: ProviderDetails },
    retryable?: boolean,
  ) {
    super(code, message, details, retryable);
    this.name = 'ProxmoxApiError';
  }

  /** The message and every parameter message, for matching. */
  get allText(): string {
    return [this.providerMessage, ...Object.values(this.paramErrors ?? {})].join('\n');
  }
}

/** A task that ended with an exit status other than OK / WARNINGS. */
export class ProxmoxTaskError extends ProxmoxApiError {
  constructor(
    message: string,
    readonly exitStatus: string,
    details: { provider: ProviderDetails },
  ) {
    super('PROVIDER_UNAVAILABLE', message, 0, exitStatus, undefined, details, !isDeterministicRefusal(exitStatus));
    this.name = 'ProxmoxTaskError';
  }
}

/**
 * Refusals Proxmox repeats word for word on every try, because they follow from the request, the
 * template or the cluster's configuration: retrying them only delays the failure (by about 30 s of
 * job retries). Lock and timeout messages are not here: those go away by themselves.
 */
const DETERMINISTIC_PATTERNS = [
  /SSH public key validation error/i,
  /can't clone VM to node '[^']*' \(VM uses local storage\)/i,
  /can't clone to non-shared storage/i,
  /storage '[^']*' is not available on node/i,
  /storage '[^']*' does not support vm images/i,
  /Linked clone feature is not supported/i,
  /shrinking disks is not supported/i,
  /you can't start a vm if it's a template/i,
  /protection mode enabled/i,
  /pool '[^']*' does not exist/i,
  /unable to parse/i,
];

/** Whether a Proxmox message is one of the refusals that the same request will always get again. */
export function isDeterministicRefusal(text: string): boolean {
  return !LOCK_PATTERNS.some((p) => p.test(text)) && DETERMINISTIC_PATTERNS.some((p) => p.test(text));
}

/** Lock contention: worth retrying with backoff (per-VM flock, config lock, storage/cluster locks). */
const LOCK_PATTERNS = [
  /VM is locked/i,
  /can't lock file/i,
  /got lock request timeout/i,
  /cfs-lock .* error/i,
  /got no worker upid/i,
];
/** A VMID taken between `nextid` and `clone`/`create`. */
const VMID_TAKEN_PATTERNS = [/already exists/i];
/** The VM (or its config) is gone. */
const NOT_FOUND_PATTERNS = [/does not exist/i, /no such VM/i, /no such (?:file|vm|guest)/i];

export function isLockError(err: unknown): boolean {
  return err instanceof ProxmoxApiError && LOCK_PATTERNS.some((p) => p.test(err.allText));
}

export function isVmidTaken(err: unknown): boolean {
  return err instanceof ProxmoxApiError && VMID_TAKEN_PATTERNS.some((p) => p.test(err.allText));
}

export function isVmMissing(err: unknown): boolean {
  return err instanceof ProxmoxApiError && (err.status === 404 || NOT_FOUND_PATTERNS.some((p) => p.test(err.allText)));
}

export function messageMatches(err: unknown, pattern: RegExp): boolean {
  return err instanceof ProxmoxApiError && pattern.test(err.allText);
}

/** Reads the error shapes of an answer that is not 2xx. */
export function parseErrorBody(body: unknown, reason: string): { message: string; errors?: Record<string, string> } {
  let message = '';
  let errors: Record<string, string> | undefined;
  if (body && typeof body === 'object') {
    const b = body as Record<string, unknown>;
    if (typeof b.message === 'string') message = b.message;
    if (b.errors && typeof b.errors === 'object' && !Array.isArray(b.errors)) {
      errors = {};
      for (const [k, v] of Object.entries(b.errors as Record<string, unknown>)) errors[k] = String(v).trim();
    }
  }
  // The body message repeats the reason phrase as its first line on new servers; old ones send only
  // the reason phrase. Either way the longest of the two carries the most.
  const trimmed = message.trim();
  const text = trimmed.length >= reason.trim().length ? trimmed : reason.trim();
  return { message: text, ...(errors && Object.keys(errors).length > 0 ? { errors } : {}) };
}

/** The taxonomy code of an HTTP error answer, before the driver refines it from the message. */
export function codeOfStatus(status: number): { code: ErrorCode; retryable?: boolean } {
  if (status === 400) return { code: 'INVALID_REQUEST' };
  // Refused credentials: the provider refuses service. Retrying the same job will not fix them.
  if (status === 401 || status === 403) return { code: 'PROVIDER_UNAVAILABLE', retryable: false };
  if (status === 404) return { code: 'NOT_FOUND' };
  // Method not implemented: this Proxmox does not have the API call (version mismatch).
  if (status === 501) return { code: 'FEATURE_NOT_SUPPORTED' };
  return { code: 'PROVIDER_UNAVAILABLE' };
}

/** The code of a deterministic 500: the tenant's own input (ssh keys) or the cluster's configuration. */
function deterministicRefusal(message: string): { code: ErrorCode; retryable: false; summary: string } {
  if (/SSH public key validation error/i.test(message)) {
    return { code: 'INVALID_REQUEST', retryable: false, summary: 'the provider refused one of the ssh keys' };
  }
  return {
    code: 'PROVIDER_UNAVAILABLE',
    retryable: false,
    summary: 'the provider refused the request (its configuration does not allow it)',
  };
}

const SUMMARY: Partial<Record<number, string>> = {
  400: 'the provider rejected the parameters of the request',
  401: 'the provider refused the credentials',
  403: 'the provider refused the credentials (permission check failed)',
  404: 'the provider has no such resource',
  501: 'the provider version does not implement the API call',
};

export function apiError(status: number, reason: string, body: unknown, operation: string): ProxmoxApiError {
  const parsed = parseErrorBody(body, reason);
  const ofStatus = codeOfStatus(status);
  const refusal =
    status === 500 && isDeterministicRefusal(parsed.message) ? deterministicRefusal(parsed.message) : undefined;
  const { code, retryable } = refusal ?? ofStatus;
  const summary =
    refusal?.summary ??
    SUMMARY[status] ??
    (status >= 595 && status <= 599
      ? 'the provider could not reach one of its hosts'
      : `the provider answered HTTP ${status}`);
  return new ProxmoxApiError(
    code,
    summary,
    status,
    parsed.message,
    parsed.errors,
    {
      provider: {
        status,
        message: parsed.message,
        ...(parsed.errors ? { errors: parsed.errors } : {}),
        operation,
      },
    },
    retryable,
  );
}

/**
 * Transport failures: the provider could not be reached or the connection broke. The same words as
 * common/call-errors.ts, as a ProxmoxApiError (status 0) like every other failure of this client.
 */
export function transportError(reason: string, operation: string, message: string, retryable = true): ProxmoxApiError {
  return new ProxmoxApiError(
    'PROVIDER_UNAVAILABLE',
    message,
    0,
    message,
    undefined,
    { provider: { reason, operation } },
    retryable,
  );
}

/**
 * Replaces every occurrence of the given secrets in a string, array or plain object tree. Applied to
 * every error the client lets out, whatever its origin, so that a server echoing a header or a
 * library quoting a request can never carry a secret into a job's details.
 */
export function redact<T>(value: T, secrets: readonly string[]): T {
  // Longest first, so `TOKENID=SECRET` goes as a whole rather than leaving the token id behind.
  const active = secrets.filter((s) => typeof s === 'string' && s.length >= 4).sort((a, b) => b.length - a.length);
  if (active.length === 0) return value;
  const scrub = (s: string): string => {
    let out = s;
    for (const secret of active) {
      out = out.split(secret).join('***');
      const encoded = encodeURIComponent(secret);
      if (encoded !== secret) out = out.split(encoded).join('***');
    }
    return out;
  };
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') return scrub(v);
    if (Array.isArray(v)) return v.map(walk);
    // Plain data only (checked by tag, not prototype: test runners load modules in other realms).
    if (
      v &&
      typeof v === 'object' &&
      !(v instanceof Error) &&
      Object.prototype.toString.call(v) === '[object Object]'
    ) {
      return Object.fromEntries(Object.entries(v as Record<string, unknown>).map(([k, x]) => [k, walk(x)]));
    }
    return v;
  };
  return walk(value) as T;
}

/** A copy of an HcpError with secrets scrubbed from its message and details. */
export function redactError(err: HcpError, secrets: readonly string[]): HcpError {
  const message = redact(err.message, secrets);
  const details = err.details ? redact(err.details, secrets) : undefined;
  if (message === err.message && JSON.stringify(details) === JSON.stringify(err.details)) return err;
  if (err instanceof ProxmoxTaskError) {
    return new ProxmoxTaskError(message, redact(err.exitStatus, secrets), details as { provider: ProviderDetails });
  }
  if (err instanceof ProxmoxApiError) {
    const copy = new ProxmoxApiError(
      err.code,
      message,
      err.status,
      redact(err.providerMessage, secrets),
      err.paramErrors ? redact(err.paramErrors, secrets) : undefined,
      details as { provider: ProviderDetails },
      err.retryable,
    );
    return copy;
  }
  return new HcpError(err.code, message, details, err.retryable);
}
