import type { FastifyReply, FastifyRequest } from 'fastify';

/** A request as HCP's guards, interceptors and controllers see it: path parameters and query by name. */
export type HttpRequest = FastifyRequest<{
  Params: Record<string, string | undefined>;
  Querystring: Record<string, unknown>;
}>;

export type HttpReply = FastifyReply;

/** The path of a request's URL, without its query string, as sent (not decoded). */
export function pathOf(req: { url: string }): string {
  const url = req.url;
  const at = url.indexOf('?');
  return at < 0 ? url : url.slice(0, at);
}

/** The route pattern that matched (`/v1/projects/:project_id/vms`), '' when none did. */
export function routePatternOf(req: FastifyRequest): string {
  return req.routeOptions?.url ?? '';
}

/** A request header as one string (the first of repeated ones), or undefined. */
export function headerOf(req: { headers: FastifyRequest['headers'] }, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}
