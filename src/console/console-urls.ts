import { type ConsoleType, invalidField } from '@hcp/domain';
import type { HcpConfig } from '../config/hcp-config';

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

/**
 * Where console URLs may point and console websockets may be opened from: the configured public URL,
 * and in dev mode (only) the loopback-style hosts of HCP_ALLOWED_HOSTS, on any port.
 */
export interface ConsoleOrigins {
  publicUrl: string | null;
  allowedHosts: readonly string[];
}

export function consoleOriginsOf(config: HcpConfig): ConsoleOrigins {
  return {
    publicUrl: config.console.publicUrl,
    // jwks mode requires HCP_PUBLIC_URL at start; the allowlist is a dev-mode convenience only.
    allowedHosts: config.auth.mode === 'dev' ? config.console.allowedHosts : [],
  };
}

/**
 * The base of a console URL handed to a client. The request's Host is the client's to choose, and the
 * URL carries a live token: without a public URL it is used only when it names an allowed host, and
 * refused (INVALID_REQUEST) otherwise, rather than silently pointing the client at another base.
 */
export function consoleBaseOf(origins: ConsoleOrigins, requestOrigin: string): string {
  if (origins.publicUrl) return origins.publicUrl;
  const url = plainOrigin(requestOrigin);
  if (!url || !origins.allowedHosts.includes(url.hostname.toLowerCase()))
    throw invalidField(
      'Host',
      'the Host header does not name a host HCP hands console URLs out for (set HCP_PUBLIC_URL or HCP_ALLOWED_HOSTS)',
    );
  return url.origin;
}

/**
 * Whether a websocket's Origin header may open a console: the public URL's origin, or in dev mode an
 * allowed host. Browsers always send Origin, so a page on another site cannot drive a console with a
 * token it got hold of; clients that send no Origin (not browsers) are not affected.
 */
export function isAllowedConsoleOrigin(origins: ConsoleOrigins, origin: string): boolean {
  const url = plainOrigin(origin);
  if (!url) return false;
  if (origins.publicUrl && url.origin === new URL(origins.publicUrl).origin) return true;
  return origins.allowedHosts.includes(url.hostname.toLowerCase());
}

/** `http(s)://host[:port]` and nothing else (no credentials, path, query or fragment), or null. */
function plainOrigin(text: string): URL | null {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return null;
  }
  const plain =
    (url.protocol === 'http:' || url.protocol === 'https:') &&
    !url.username &&
    !url.password &&
    url.pathname === '/' &&
    !url.search &&
    !url.hash &&
    text.replace(/\/$/, '').toLowerCase() === url.origin.toLowerCase();
  return plain ? url : null;
}
