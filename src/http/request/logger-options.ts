import type { Params } from 'nestjs-pino';
import type { IncomingMessage } from 'node:http';
import type { Options } from 'pino-http';
import { LogLevel } from '../../config/hcp-config';
import { traceIdOf } from './request-id';
import type { HttpRequest as Request } from '../edge/http-types';
import { recordedProjectId } from '@hcp/domain';

/**
 * JSON logs with the request's trace id on every line. Credentials never reach a log line: the
 * Authorization header and cookies are redacted, request bodies are not logged at all, and a URL is
 * logged without its query string (a console websocket's `?token=`, or a token someone
 * put in `?access_token=`, would otherwise be in the log).
 */
export function loggerOptions(level: LogLevel): Params {
  // No route gets nestjs-pino's own middleware: main.ts installs requestLogging in its place.
  return { pinoHttp: requestLoggerOptions(level), forRoutes: [] };
}

/** The options of the request loggers (pino-http's), and of the logger for lines outside a request. */
export function requestLoggerOptions(level: LogLevel): Options {
  return {
    level,
    genReqId: (req: IncomingMessage) => traceIdOf(req.hcpRequest ?? {}),
    // Who and which project, once the request is authenticated (the completion line has them).
    customProps: (req: IncomingMessage) => {
      const r = req.hcpRequest as (Request & { user?: { sub?: string } }) | undefined;
      const project = recordedProjectId(r?.params?.project_id).project_id;
      return {
        trace_id: traceIdOf(r ?? {}),
        ...(r?.user?.sub ? { actor: r.user.sub } : {}),
        ...(project ? { project_id: project } : {}),
      };
    },
    redact: {
      paths: [
        'req.headers.authorization',
        'req.headers.cookie',
        'req.headers["x-api-key"]',
        'req.headers["x-vault-token"]',
        'res.headers["set-cookie"]',
        '*.credentials',
        '*.password',
        '*.token',
        '*.ticket',
        '*.user_data',
      ],
      censor: '[redacted]',
    },
    serializers: {
      req: (req: { id: string; method: string; url: string; headers: Record<string, unknown> }) => ({
        id: req.id,
        method: req.method,
        url: loggedUrl(req.url),
        headers: req.headers,
      }),
    },
  };
}

/**
 * A URL as logged: its path, and `?[redacted]` for a query string. Not even the parameter names: in
 * `?<token>` the name is the secret.
 */
export function loggedUrl(url: string | undefined): string {
  const given = url ?? '';
  const at = given.search(/[?#]/);
  return at < 0 ? given : `${given.slice(0, at)}?[redacted]`;
}
