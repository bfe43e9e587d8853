/**
 * Failures of a call to a provider that read the same whichever provider it is: the call ran out of
 * time or was aborted, or the provider could not be reached. Tenant-facing words name no provider;
 * what failed (`operation`) and why (`reason`) stay in `details.provider` for ops.
 */
import { HcpError } from '@hcp/domain';
import type { CallContext } from '../spi/provider-driver';

export function timeoutError(operation: string, why: 'deadline' | 'aborted' | 'request-timeout'): HcpError {
  const text =
    why === 'aborted'
      ? 'the call to the provider was aborted'
      : why === 'deadline'
        ? 'the provider did not answer before the deadline'
        : 'the provider did not answer in time';
  return new HcpError('PROVIDER_TIMEOUT', text, {
    reason: why,
    provider: { operation },
  });
}

/** The provider could not be reached or the connection broke; `reason` is the socket or TLS error code. */
export function transportError(reason: string, operation: string, message: string, retryable = true): HcpError {
  return new HcpError('PROVIDER_UNAVAILABLE', message, { provider: { reason, operation } }, retryable);
}

/** Refuses to start a try once the call is aborted or past its deadline. */
export function checkCall(ctx: CallContext, operation: string, now: () => number): void {
  if (ctx.signal.aborted) throw timeoutError(operation, 'aborted');
  if (now() >= ctx.deadline.getTime()) throw timeoutError(operation, 'deadline');
}
