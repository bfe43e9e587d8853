import type { FastifyRequest } from 'fastify';
import { HcpError } from '@hcp/domain';

/**
 * Refuses a request body HCP would not read: the JSON parser skips any other media type, so the
 * handler would run on an empty body and its defaults (a `text/plain` stop would be a graceful stop
 * the caller never asked for). Runs before the parser and every handler, so nothing is run. A body
 * without a Content-Type is refused too; requests without a body are left alone.
 */
export function requireJsonBody(req: FastifyRequest): HcpError | undefined {
  if (!hasBody(req) || mediaTypeOf(req) === 'application/json') return undefined;
  return notJson(req);
}

/** The refusal of a body that is not JSON, echoing its media type when it looks like one. */
export function notJson(req: Pick<FastifyRequest, 'headers'>): HcpError {
  return new HcpError('UNSUPPORTED_MEDIA_TYPE', 'a request body must be JSON (Content-Type: application/json)', {
    content_type: contentTypeOf(req),
  });
}

/** The media type of the Content-Type header, lower case, without parameters ('' when none). */
export function mediaTypeOf(req: Pick<FastifyRequest, 'headers'>): string {
  return (req.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
}

/** As Node's parser frames the message: chunked, or a non-zero Content-Length. */
function hasBody(req: Pick<FastifyRequest, 'headers'>): boolean {
  if (req.headers['transfer-encoding'] !== undefined) return true;
  const length = req.headers['content-length'];
  return length !== undefined && length !== '0';
}

/** The media type given (without parameters), echoed only when it looks like one: it is caller input. */
function contentTypeOf(req: Pick<FastifyRequest, 'headers'>): string | null {
  const type = mediaTypeOf(req);
  return /^[a-z0-9!#$&^_.+-]{1,64}\/[a-z0-9!#$&^_.+-]{1,64}$/.test(type) ? type : null;
}
