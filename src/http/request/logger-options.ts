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
    customProps: (req: IncomingMessage) => requestBindings(req.hcpRequest as LoggedRequest | undefined),
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

type LoggedRequest = Request & { user?: { sub?: string } };

/** The trace id, actor and project of a request, as its log lines carry them. */
function requestBindings(r: LoggedRequest | undefined): Record<string, string> {
  const project = recordedProjectId(r?.params?.project_id).project_id;
  return {
    trace_id: traceIdOf(r ?? {}),
    ...(r?.user?.sub ? { actor: r.user.sub } : {}),
    ...(project ? { project_id: project } : {}),
  };
}

/**
 * What a line written about a request (the error it was answered with, a record that could not be
 * written) says of it: what its completion line says (trace id, actor, project), and its method and URL,
 * the query left out. Passed by the line itself: no logger is bound to the request (requestLogging).
 */
export function requestLogFields(req: LoggedRequest): Record<string, unknown> {
  return { ...requestBindings(req), req: { id: traceIdOf(req), method: req.method, url: loggedUrl(req.url) } };
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
