import type { NextFunction, Request, Response } from 'express';
import { json } from 'express';
import { middlewareChain } from '../middleware-chain';
import { requireJsonBody } from './media-type';

/**
 * The request body, parsed as JSON when one is sent (and refused when it is not JSON). A request whose
 * headers announce no body (no Transfer-Encoding, no Content-Length: most GETs) skips the media-type
 * check and the parser, which would both let it through untouched; its `req.body` is left undefined,
 * as the parser leaves it.
 */
export function jsonBody(limit: string) {
  const parse = middlewareChain(requireJsonBody, json({ limit, strict: true }));
  return (req: Request, res: Response, next: NextFunction): void => {
    if (req.headers['transfer-encoding'] !== undefined || req.headers['content-length'] !== undefined) {
      parse(req, res, next);
      return;
    }
    req.body = undefined;
    next();
  };
}
