import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { type Options, pinoHttp } from 'pino-http';

type Done = (err?: Error) => void;

declare module 'node:http' {
  interface IncomingMessage {
    /** The framework's request object of this message, for what sees only the message (pino-http). */
    hcpRequest?: FastifyRequest;
  }
}

/**
 * The completion line of every request (pino-http's, at `info` and below: the request, its answer, its
 * trace id, actor and project), as an onRequest hook; none when `info` is off, where pino-http writes
 * nothing. Replaces nestjs-pino's middleware (see `loggerOptions`).
 *
 * No request-scoped logger is put in an AsyncLocalStorage, as nestjs-pino's middleware does. On Node 20
 * a store in use turns on a promise hook for every promise the process creates: with it, an API process
 * made 20-25 % fewer creates per second (bench/README.md, the twenty-third session). The lines written
 * about a request name it themselves (requestLogFields).
 */
export function requestLogging(
  options: Options,
): ((req: FastifyRequest, reply: FastifyReply, done: Done) => void) | null {
  const http = pinoHttp(options);
  // pino-http writes its completion lines at `info`, whatever the answer (no customLogLevel is set).
  if (!(http.logger as Logger).isLevelEnabled('info')) return null;
  return (req: FastifyRequest, reply: FastifyReply, done: Done): void => {
    req.raw.hcpRequest = req;
    http(req.raw, reply.raw);
    done();
  };
}
