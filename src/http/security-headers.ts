import type { NextFunction, Request, Response } from 'express';
import helmet from 'helmet';

/**
 * Security headers on every answer. API answers forbid everything a browser could do with them (no
 * scripts, no framing, no caching of tenant data); the /docs page and the webconsole keep CSPs their
 * scripts can run under.
 */
export function securityHeaders() {
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
  return (req: Request, res: Response, next: NextFunction) => {
    if (req.path.startsWith('/docs')) return docs(req, res, next);
    if (req.path.startsWith('/console/')) {
      res.setHeader('Cache-Control', 'no-store');
      return webconsole(req, res, next);
    }
    res.setHeader('Cache-Control', 'no-store');
    return api(req, res, next);
  };
}
