import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { type Options, pinoHttp } from 'pino-http';
// nestjs-pino reads the request's logger from this store (PinoLogger, behind Nest's Logger).
import { Store, storage } from 'nestjs-pino/storage';

type Bindings = object;
type Done = (err?: Error) => void;

declare module 'node:http' {
  interface IncomingMessage {
    /** The framework's request object of this message, for what sees only the message (pino-http). */
    hcpRequest?: FastifyRequest;
  }
}

/**
 * Gives every request its logger (an onRequest hook), as nestjs-pino's own middleware does, for the
 * lines written while it is answered. pino-http builds two child loggers per request (serializing the
 * request's headers through the redaction) and writes its completion line at `info`; when that level is
 * off, no completion line is ever written, so the request's logger is only built the first time a line
 * is written under it (a warning, an error) and most requests never pay for it. At `info` and below
 * everything is pino-http's as before. Replaces nestjs-pino's middleware (see `loggerOptions`).
 */
export function requestLogging(options: Options) {
  const http = pinoHttp(options);
  const root = http.logger as Logger;
  const customProps = typeof options.customProps === 'function' ? options.customProps : () => ({});
  const genReqId = options.genReqId as (req: IncomingMessage, res: ServerResponse) => IncomingMessage['id'];
  // pino-http writes its completion lines at `info`, whatever the answer (no customLogLevel is set).
  if (root.isLevelEnabled('info')) {
    return (req: FastifyRequest, reply: FastifyReply, done: Done): void => {
      req.raw.hcpRequest = req;
      http(req.raw, reply.raw, () =>
        storage.run(new Store(req.raw.allLogs[req.raw.allLogs.length - 1] as Logger), done),
      );
    };
  }
  return (req: FastifyRequest, reply: FastifyReply, done: Done): void => {
    req.raw.hcpRequest = req;
    storage.run(
      new LazyRequestLogger(root, req.raw, () => genReqId(req.raw, reply.raw), customProps) as unknown as Store,
      done,
    );
  };
}

/** nestjs-pino's Store, whose logger is built when first asked for. */
class LazyRequestLogger {
  private built: Logger | undefined;
  readonly responseLogger = undefined;

  constructor(
    private readonly root: Logger,
    private readonly req: IncomingMessage,
    private readonly requestId: () => IncomingMessage['id'],
    private readonly customProps: (req: IncomingMessage, res: ServerResponse) => Bindings,
  ) {}

  get logger(): Logger {
    if (!this.built) {
      this.req.id ??= this.requestId();
      // The same bindings pino-http gives a request's logger: the request, then the custom properties.
      this.built = this.root
        .child({ req: this.req })
        .child(this.customProps(this.req, undefined as unknown as ServerResponse));
    }
    return this.built;
  }

  /** PinoLogger.assign replaces the request's logger with a child of it. */
  set logger(logger: Logger) {
    this.built = logger;
  }
}
