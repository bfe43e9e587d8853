import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import helmet from 'helmet';
import type { EdgeStep } from './edge/edge-step';
import { pathOf } from './edge/http-types';

/**
 * Security headers on every answer. API answers forbid everything a browser could do with them (no
 * scripts, no framing, no caching of tenant data); the /docs page and the webconsole keep CSPs their
 * scripts can run under.
 */
export function securityHeaders(): EdgeStep {
  const api = helmet({
    contentSecurityPolicy: { useDefaults: false, directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] } },
    crossOriginResourcePolicy: { policy: 'same-origin' },
    strictTransportSecurity: { maxAge: 31_536_000, includeSubDomains: true },
  });
  const docs = helmet({
    contentSecurityPolicy: {
      directives: {
        scriptSrc: ["'self'", "'unsafe-inline'"],
        styleSrc: ["'self'", "'unsafe-inline'"],
        imgSrc: ["'self'", 'data:'],
      },
    },
  });
  // The webconsole: its own scripts and noVNC's, a websocket back to HCP, a canvas; nothing from elsewhere.
  const webconsole = helmet({
    contentSecurityPolicy: {
      useDefaults: false,
      directives: {
        defaultSrc: ["'none'"],
        scriptSrc: ["'self'"],
        styleSrc: ["'self'"],
        imgSrc: ["'self'", 'data:', 'blob:'],
        connectSrc: ["'self'"],
        baseUri: ["'none'"],
        formAction: ["'none'"],
        frameAncestors: ["'none'"],
      },
    },
    crossOriginResourcePolicy: { policy: 'same-origin' },
    strictTransportSecurity: { maxAge: 31_536_000, includeSubDomains: true },
    referrerPolicy: { policy: 'no-referrer' },
  });
  const apiHeaders = headerBlock(api, [['Cache-Control', 'no-store']]);
  const docsHeaders = headerBlock(docs);
  const webconsoleHeaders = headerBlock(webconsole, [['Cache-Control', 'no-store']]);
  return (req: FastifyRequest, reply: FastifyReply) => {
    const path = pathOf(req);
    const block = path.startsWith('/docs')
      ? docsHeaders
      : path.startsWith('/console/')
        ? webconsoleHeaders
        : apiHeaders;
    reply.headers(block);
    return undefined;
  };
}

type HeaderBlock = Readonly<Record<string, string>>;

/**
 * What a helmet middleware sets, taken once: with these options (no directive computed per request)
 * it writes the same headers on every answer, so they are set from a list instead of running its
 * dozen middlewares per request. (Helmet also removes X-Powered-By, which Fastify never sends.)
 */
function headerBlock(
  middleware: (req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void) => void,
  before: ReadonlyArray<readonly [string, string]> = [],
): HeaderBlock {
  const headers = new Map<string, readonly [string, string]>(before.map((h) => [h[0].toLowerCase(), h]));
  const recorder = {
    setHeader: (name: string, value: string) => headers.set(name.toLowerCase(), [name, String(value)]),
    removeHeader: (name: string) => headers.delete(name.toLowerCase()),
  };
  let failure: unknown;
  middleware({} as IncomingMessage, recorder as unknown as ServerResponse, (err) => {
    failure = err;
  });
  if (failure) throw failure;
  return Object.fromEntries(headers.values());
}
