/**
 * How virsh failures become taxonomy errors. virsh reports every failure as `error: ...` lines on
 * stderr with exit status 1; libvirt's error class is only in the text, so the text is what is matched.
 * The text is kept in `details.provider` (ops only); messages name no domain, pool or host.
 */
import { HcpError, type ErrorCode } from '@hcp/domain';

export interface VirshFailureDetails {
  /** The virsh command (first word only: arguments may carry names). */
  operation: string;
  /** virsh's stderr, trimmed. */
  message?: string;
  reason?: string;
}

/** A failure virsh reported: already a taxonomy error; `virshMessage` is kept for matching. */
export class VirshError extends HcpError {
  constructor(
    code: ErrorCode,
    message: string,
    readonly virshMessage: string,
    details: VirshFailureDetails,
    retryable?: boolean,
  ) {
    super(code, message, { provider: details }, retryable);
    this.name = 'VirshError';
  }
}

const CONNECTION_FAILURE =
  /failed to connect to the hypervisor|Failed to connect socket|Cannot recv data|End of file while reading data|Connection reset|client socket is closed|unable to connect to server|no connection driver available|Broken pipe/i;
// libvirt 9 virsh says only `failed to get domain 'x'` for a domain it has no such name, id or uuid of.
const DOMAIN_MISSING = /Domain not found|no domain with matching (name|uuid)|failed to get domain/i;
const VOLUME_MISSING = /Storage volume not found|no storage vol with matching (name|path|key)/i;
const POOL_MISSING = /Storage pool not found|no storage pool with matching/i;
const NOT_RUNNING = /domain is not running|Requested operation is not valid: domain is not running/i;
const ALREADY_RUNNING = /domain is already (active|running)/i;
const ALREADY_EXISTS = /already exists/i;
const INVALID_SPEC =
  /XML error|XML document failed to validate|invalid argument|unsupported configuration|Failed to parse|malformed/i;

export const isDomainMissing = (err: unknown) => err instanceof VirshError && DOMAIN_MISSING.test(err.virshMessage);
export const isVolumeMissing = (err: unknown) => err instanceof VirshError && VOLUME_MISSING.test(err.virshMessage);
export const isNotRunning = (err: unknown) => err instanceof VirshError && NOT_RUNNING.test(err.virshMessage);
export const isAlreadyRunning = (err: unknown) => err instanceof VirshError && ALREADY_RUNNING.test(err.virshMessage);
export const isAlreadyExisting = (err: unknown) => err instanceof VirshError && ALREADY_EXISTS.test(err.virshMessage);

/** Classifies a virsh command that exited with an error. */
export function virshFailure(operation: string, stderr: string): VirshError {
  const text = stderr.trim();
  const details: VirshFailureDetails = { operation, message: text.slice(0, 2000) };
  if (CONNECTION_FAILURE.test(text))
    return new VirshError('PROVIDER_UNAVAILABLE', 'the host hypervisor is unavailable', text, details, true);
  if (DOMAIN_MISSING.test(text)) return new VirshError('NOT_FOUND', 'VM not found', text, details, false);
  if (VOLUME_MISSING.test(text)) return new VirshError('NOT_FOUND', 'disk volume not found', text, details, false);
  if (POOL_MISSING.test(text))
    return new VirshError('PROVIDER_UNAVAILABLE', 'the host storage pool is unavailable', text, details, true);
  if (NOT_RUNNING.test(text)) return new VirshError('CONFLICT', 'the VM is not running', text, details, false);
  if (ALREADY_EXISTS.test(text)) return new VirshError('CONFLICT', 'the VM already exists', text, details, false);
  if (INVALID_SPEC.test(text))
    return new VirshError('INVALID_REQUEST', 'the host refused the VM specification', text, details, false);
  return new VirshError('PROVIDER_UNAVAILABLE', 'the host hypervisor failed the operation', text, details, true);
}

export function virshTimeout(operation: string, reason: 'deadline' | 'aborted'): VirshError {
  const message = reason === 'deadline' ? 'the host did not answer in time' : 'the call was aborted';
  return new VirshError('PROVIDER_TIMEOUT', message, '', { operation, reason }, true);
}

export function virshNotStarted(operation: string, reason: string): VirshError {
  return new VirshError(
    'PROVIDER_UNAVAILABLE',
    'the host hypervisor tools are unavailable',
    '',
    { operation, reason },
    true,
  );
}
