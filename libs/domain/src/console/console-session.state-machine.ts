import { HcpError, notFound } from '../errors';
import type { ConsoleType } from '../ops/capabilities';
import {
  ConsoleCloseReason,
  ConsoleRefusalReason,
  ConsoleSessionEvent,
  consoleSessionEvent,
} from './console-session.events';

/**
 * A console session: opened by a tenant for a running VM, connected at most once with its token before
 * `connect_by`, closed once. The single use of the token is this state machine plus the event store's
 * expected revision: two instances racing with the same token cannot both append `ConsoleSessionConnected`.
 */
export type ConsoleSessionStatus = 'awaiting_connection' | 'connected' | 'closed';

export interface ConsoleSessionState {
  session_id: string;
  project_id: string;
  vm_id: string;
  type: ConsoleType;
  token_sha256: string;
  connect_by: string;
  max_duration_ms: number;
  opened_by: string;
  status: ConsoleSessionStatus;
  /** When HCP closes a connected session at the latest. */
  ends_by: string | null;
  close_reason: ConsoleCloseReason | null;
  opened_at: string;
  updated_at: string;
}

export function evolveConsoleSession(
  state: ConsoleSessionState | null,
  event: ConsoleSessionEvent,
  at: string,
): ConsoleSessionState | null {
  switch (event.type) {
    case 'ConsoleSessionOpened': {
      const d = event.data;
      return {
        session_id: d.session_id,
        project_id: d.project_id,
        vm_id: d.vm_id,
        type: d.type,
        token_sha256: d.token_sha256,
        connect_by: d.connect_by,
        max_duration_ms: d.max_duration_ms,
        opened_by: d.opened_by,
        status: 'awaiting_connection',
        ends_by: null,
        close_reason: null,
        opened_at: at,
        updated_at: at,
      };
    }
    case 'ConsoleSessionConnected':
      return state && { ...state, status: 'connected', ends_by: event.data.ends_by, updated_at: at };
    case 'ConsoleSessionClosed':
      return state && { ...state, status: 'closed', close_reason: event.data.reason, updated_at: at };
    case 'ConsoleSessionRefused':
      return state;
  }
}

export type ConsoleSessionCommand =
  | {
      type: 'open';
      session_id: string;
      project_id: string;
      vm_id: string;
      opened_by: string;
      console_type: ConsoleType;
      token_sha256: string;
      now: Date;
      connect_timeout_ms: number;
      max_duration_ms: number;
    }
  /** A connection presents the hash of the token it carries, from a client address. */
  | { type: 'connect'; token_sha256: string; now: Date; client_address: string | null }
  | { type: 'close'; reason: ConsoleCloseReason; bytes_to_client: number; bytes_to_provider: number };

export function decideConsoleSession(
  state: ConsoleSessionState | null,
  command: ConsoleSessionCommand,
): ConsoleSessionEvent[] {
  if (command.type === 'open') {
    if (state) throw new HcpError('CONFLICT', 'the console session exists already');
    return [
      consoleSessionEvent('ConsoleSessionOpened', {
        session_id: command.session_id,
        project_id: command.project_id,
        vm_id: command.vm_id,
        type: command.console_type,
        token_sha256: command.token_sha256,
        connect_by: new Date(command.now.getTime() + command.connect_timeout_ms).toISOString(),
        max_duration_ms: command.max_duration_ms,
        opened_by: command.opened_by,
      }),
    ];
  }
  if (!state) throw notFound('console session');
  const ref = { session_id: state.session_id, project_id: state.project_id, vm_id: state.vm_id };
  switch (command.type) {
    case 'connect': {
      const reason = consoleConnectRefusal(state, command.token_sha256, command.now);
      if (!reason) {
        const ends_by = new Date(command.now.getTime() + state.max_duration_ms).toISOString();
        return [consoleSessionEvent('ConsoleSessionConnected', { ...ref, ends_by })];
      }
      // A session that is over has nothing left to protect: its refusals are answered, not recorded, so
      // a known session id is no lever for writing events after the fact.
      if (consoleSessionIsOver(state, command.now)) return [];
      return [consoleSessionEvent('ConsoleSessionRefused', { ...ref, reason, client_address: command.client_address })];
    }
    case 'close':
      if (state.status === 'closed') return [];
      return [
        consoleSessionEvent('ConsoleSessionClosed', {
          ...ref,
          reason: command.reason,
          bytes_to_client: command.bytes_to_client,
          bytes_to_provider: command.bytes_to_provider,
        }),
      ];
  }
}

/** Why a connection presenting this token digest is refused now, or null when it may connect. */
export function consoleConnectRefusal(
  state: ConsoleSessionState,
  token_sha256: string,
  now: Date,
): ConsoleRefusalReason | null {
  // The order matters: a wrong token learns nothing about the session's state.
  if (!sameDigest(state.token_sha256, token_sha256)) return 'token_invalid';
  if (state.status !== 'awaiting_connection') return 'token_used';
  if (now.getTime() > Date.parse(state.connect_by)) return 'token_expired';
  return null;
}

/** Closed, or never connected before `connect_by`, or connected past `ends_by`: no connection will follow. */
export function consoleSessionIsOver(state: ConsoleSessionState, now: Date): boolean {
  if (state.status === 'closed') return true;
  const deadline = state.status === 'awaiting_connection' ? state.connect_by : state.ends_by;
  return deadline !== null && now.getTime() > Date.parse(deadline);
}

/** Compares two hex digests in time independent of where they differ. */
function sameDigest(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}
