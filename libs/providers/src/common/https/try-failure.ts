/**
 * Whatever one try of an HTTPS exchange ends in that is not an HTTP answer: the connect failed, the
 * certificate is not trusted, the connection broke, the try timed out, the call was aborted or ran
 * past its deadline. The retry loop of each client decides what a TryFailure is worth, then
 * failureToError turns it into the taxonomy error the caller sees.
 */
import type { HcpError } from '@hcp/domain';
import type { CallContext } from '../../spi/provider-driver';
import { timeoutError, transportError } from '../call-errors';
import { TlsTrustError, isTlsTrustFailure } from './trusting-agent';

/** Thrown inside one try; the retry loop decides what it becomes. */
export class TryFailure extends Error {
  constructor(
    readonly kind: 'connect' | 'transport' | 'timeout' | 'aborted' | 'deadline' | 'trust',
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

// Failures while connecting: nothing has been sent, so any request may be tried again.
const CONNECT_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EADDRNOTAVAIL',
]);

/** What a socket error says about an exchange: the certificate is not trusted, the connect failed, or the connection broke. */
export function connectionFailure(err: NodeJS.ErrnoException): TryFailure {
  const code = err instanceof TlsTrustError ? err.code : (err.code ?? 'ECONNRESET');
  if (err instanceof TlsTrustError || isTlsTrustFailure(code))
    return new TryFailure('trust', code, 'untrusted certificate');
  if (CONNECT_CODES.has(code)) return new TryFailure('connect', code, 'connect failed');
  if (code === 'ETIMEDOUT') return new TryFailure('connect', code, 'connect timed out');
  return new TryFailure('transport', code, 'connection failed');
}

/** Builds the error of a transport failure; a driver whose errors carry more than HcpError brings its own. */
export type TransportErrorOf = (reason: string, operation: string, message: string, retryable?: boolean) => HcpError;

export function failureToError(
  err: TryFailure,
  operation: string,
  ctx: CallContext,
  now: () => number,
  transportErrorOf: TransportErrorOf = transportError,
): HcpError {
  switch (err.kind) {
    case 'aborted':
      return timeoutError(operation, 'aborted');
    case 'deadline':
      return timeoutError(operation, 'deadline');
    case 'timeout':
      return timeoutError(operation, now() >= ctx.deadline.getTime() ? 'deadline' : 'request-timeout');
    case 'trust':
      // A certificate that is not trusted will not become trusted by trying again.
      return transportErrorOf(err.code, operation, "the provider's TLS certificate is not trusted", false);
    case 'connect':
      return transportErrorOf(err.code, operation, 'the provider is not reachable');
    case 'transport':
      return transportErrorOf(err.code, operation, 'the connection to the provider failed');
  }
}
