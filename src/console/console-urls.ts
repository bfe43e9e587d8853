import type { ConsoleType } from '@hcp/domain';

/** HCP's console websocket: `/v1/console/{session_id}/websocket?token=...` (an HTTP upgrade, not a Nest route). */
const WEBSOCKET_PATH = /^\/v1\/console\/([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\/websocket$/;

export function consoleWebsocketPath(sessionId: string): string {
  return `/v1/console/${sessionId}/websocket`;
}

/** The session id of a console websocket path, or null for any other path. */
export function sessionIdOfWebsocketPath(pathname: string): string | null {
  return WEBSOCKET_PATH.exec(pathname)?.[1] ?? null;
}

/**
 * Where the client goes: for `webconsole` HCP's page with a browser VNC client, the token in the URL's
 * fragment (browsers never send fragments to servers, so it stays out of every log); for the others
 * HCP's websocket, which takes the token as its `token` query parameter.
 */
export function consoleUrlOf(base: string, sessionId: string, type: ConsoleType, token: string): string {
  if (type === 'webconsole') return `${base}/console/${sessionId}#token=${token}`;
  return `${base.replace(/^http/, 'ws')}${consoleWebsocketPath(sessionId)}`;
}
