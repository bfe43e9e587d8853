import type { NextFunction, Request, Response } from 'express';
import { HcpError } from '@hcp/domain';

/**
 * Refuses a request body HCP would not read: the JSON parser skips any other media type, so the
 * handler would run on an empty body and its defaults (a `text/plain` stop would be a graceful stop
 * the caller never asked for). Runs before the parser and every handler, so nothing is run. A body
 * without a Content-Type is refused too; requests without a body are left alone.
 */
export function requireJsonBody(req: Request, _res: Response, next: NextFunction): void {
  if (!hasBody(req) || req.is('application/json') === 'application/json') {
    next();
    return;
  }
  next(
    new HcpError('UNSUPPORTED_MEDIA_TYPE', 'a request body must be JSON (Content-Type: application/json)', {
      content_type: contentTypeOf(req),
    }),
  );
}

/** As Node's parser frames the message: chunked, or a non-zero Content-Length. */
function hasBody(req: Request): boolean {
  if (req.headers['transfer-encoding'] !== undefined) return true;
  const length = req.headers['content-length'];
  return length !== undefined && length !== '0';
}

/** The media type given (without parameters), echoed only when it looks like one: it is caller input. */
function contentTypeOf(req: Request): string | null {
  const type = (req.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
  return /^[a-z0-9!#$&^_.+-]{1,64}\/[a-z0-9!#$&^_.+-]{1,64}$/.test(type) ? type : null;
}
