/**
 * Which Proxmox answers are worth another try of an idempotent call. Which failures are safe to
 * repeat depends on the call (see ProxmoxClient.withRetries and the login in proxmox-auth.ts); the
 * backoff within the call's deadline is common/retry.ts.
 */
// Statuses worth a second try of an idempotent call: gateway trouble and pveproxy's pseudo statuses.
export const RETRY_STATUSES = new Set([502, 503, 504, 595, 596, 597, 599]);
const RETRY_500_MESSAGES = [/got no worker upid/i, /try again/i];

/** An error answer that may go away by itself (the same call may then succeed). */
export function isTransientAnswer(status: number, providerMessage: string): boolean {
  return RETRY_STATUSES.has(status) || (status === 500 && RETRY_500_MESSAGES.some((p) => p.test(providerMessage)));
}
