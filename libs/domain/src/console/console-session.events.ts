import type { ConsoleType } from '../ops/capabilities';
import { DomainEvent } from '../events/domain-event';

/** What every console event names, so the audit mapping needs nothing but the event itself. */
interface ConsoleSessionRef {
  session_id: string;
  project_id: string;
  vm_id: string;
}

/**
 * A tenant opened a console session. Only the token's SHA-256 is kept: the token itself exists in the
 * one answer that created the session and nowhere else. `opened_by` owns the session: whoever presents
 * the token later acts on that principal's behalf, and the audit trail says so.
 */
export type ConsoleSessionOpened = DomainEvent<
  'ConsoleSessionOpened',
  ConsoleSessionRef & {
    type: ConsoleType;
    token_sha256: string;
    connect_by: string;
    max_duration_ms: number;
    opened_by: string;
  }
>;
/** The token was used, once: from here on no connection can use it again. */
export type ConsoleSessionConnected = DomainEvent<'ConsoleSessionConnected', ConsoleSessionRef & { ends_by: string }>;

export const CONSOLE_CLOSE_REASONS = [
  'client_closed',
  'provider_closed',
  'session_expired',
  'vm_not_running',
  'provider_failed',
  'instance_stopped',
  /** v2: the instance relaying it died (its hold ran out); closed by the console sweeper. */
  'instance_lost',
] as const;
export type ConsoleCloseReason = (typeof CONSOLE_CLOSE_REASONS)[number];

/**
 * The connection ended; `bytes_*` count what HCP relayed after the handshake (0 when the sweeper closes
 * the session of a dead instance: what it relayed died with it).
 */
export type ConsoleSessionClosed = DomainEvent<
  'ConsoleSessionClosed',
  ConsoleSessionRef & { reason: ConsoleCloseReason; bytes_to_client: number; bytes_to_provider: number }
>;

export const CONSOLE_REFUSAL_REASONS = ['token_invalid', 'token_used', 'token_expired'] as const;
export type ConsoleRefusalReason = (typeof CONSOLE_REFUSAL_REASONS)[number];

/**
 * A connection attempt was turned away before reaching the provider; the session is unchanged. v2 names
 * the caller's address: whoever presents a wrong token is not the session's owner, so the event is
 * recorded as anonymous (not on the owner's behalf) with where it came from. Only refusals of a live
 * session are recorded, and only a bounded number of them (see the console connector).
 */
export type ConsoleSessionRefused = DomainEvent<
  'ConsoleSessionRefused',
  ConsoleSessionRef & {
    reason: ConsoleRefusalReason;
    /** The client address of the refused connection; null in events written before v2. */
    client_address: string | null;
  }
>;

/** v1 did not know the caller's address (and was recorded on the owner's behalf, which it keeps). */
export const upcastConsoleSessionRefusedV1 = (data: Record<string, unknown>): Record<string, unknown> => ({
  ...data,
  client_address: null,
});

/** v2 only added a reason (instance_lost): a v1 event is a v2 event as it is. */
export const upcastConsoleSessionClosedV1 = (data: Record<string, unknown>): Record<string, unknown> => data;

export type ConsoleSessionEvent =
  | ConsoleSessionOpened
  | ConsoleSessionConnected
  | ConsoleSessionClosed
  | ConsoleSessionRefused;
export type ConsoleSessionEventType = ConsoleSessionEvent['type'];

export const CONSOLE_SESSION_EVENT_VERSIONS: Record<ConsoleSessionEventType, number> = {
  ConsoleSessionOpened: 1,
  ConsoleSessionConnected: 1,
  ConsoleSessionClosed: 2,
  ConsoleSessionRefused: 2,
};

/** One stream per console session. */
export const CONSOLE_SESSION_STREAM_PREFIX = 'console-';
export const consoleSessionStreamId = (sessionId: string) => `${CONSOLE_SESSION_STREAM_PREFIX}${sessionId}`;

export function consoleSessionEvent<T extends ConsoleSessionEvent>(type: T['type'], data: T['data']): T {
  return { type, version: CONSOLE_SESSION_EVENT_VERSIONS[type], data } as T;
}
