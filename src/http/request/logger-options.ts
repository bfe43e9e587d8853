import type { Params } from 'nestjs-pino';
import type { IncomingMessage } from 'node:http';
import { LogLevel } from '../../config/hcp-config';
import { traceIdOf } from './request-id';
import type { Request } from 'express';

/**
 * JSON logs with the request's trace id on every line. Credentials never reach a log line: the
 * Authorization header and cookies are redacted, and request bodies are not logged at all.
 */
export function loggerOptions(level: LogLevel): Params {
  return {
    pinoHttp: {
      level,
      genReqId: (req: IncomingMessage) => traceIdOf(req as Request),
      // Who and which project, once the request is authenticated (the completion line has them).
      customProps: (req: IncomingMessage) => {
        const r = req as Request & { user?: { sub?: string } };
        const project = typeof r.params?.project_id === 'string' ? r.params.project_id : undefined;
        return {
          trace_id: traceIdOf(r),
          ...(r.user?.sub ? { actor: r.user.sub } : {}),
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
          url: req.url,
          headers: req.headers,
        }),
      },
    },
  };
}
