import type { Params } from 'nestjs-pino';
import type { IncomingMessage } from 'node:http';
import { LogLevel } from '../config/hcp-config';
import { traceIdOf } from '../api/http/request-id';
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
      customProps: (req: IncomingMessage) => ({ trace_id: traceIdOf(req as Request) }),
      redact: {
        paths: ['req.headers.authorization', 'req.headers.cookie', 'req.headers["x-api-key"]', 'res.headers["set-cookie"]'],
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
