import createClient, { type Client, type Middleware } from 'openapi-fetch';
import { HcpApiError } from './errors';
import type { paths } from './schema';

/** The openapi-fetch client typed by HCP's paths: `client.GET('/v1/projects/{project_id}/vms/{vm_id}', ...)`. */
export type HcpClient = Client<paths>;

export interface HcpClientOptions {
  /** HCP's address, e.g. `https://hcp.example.com` (no trailing `/v1`). */
  baseUrl: string;
  /** A bearer token, or a function asked before every request (to refresh short-lived tokens). */
  token?: string | (() => string | Promise<string>);
  fetch?: typeof fetch;
  userAgent?: string;
}

/**
 * A client of HCP's API. Answers come back as openapi-fetch's `{ data, error, response }` (give them to
 * `unwrap` to get the data or an HcpApiError); a request that reaches no server throws an HcpApiError
 * with code UNREACHABLE. An Authorization or User-Agent header given on one call wins over the options.
 */
export function createHcpClient(opts: HcpClientOptions): HcpClient {
  const client = createClient<paths>({
    baseUrl: opts.baseUrl.replace(/\/+$/, ''),
    ...(opts.fetch ? { fetch: opts.fetch } : {}),
  });
  client.use(identity(opts), unreachable());
  return client;
}

function identity(opts: HcpClientOptions): Middleware {
  return {
    async onRequest({ request }) {
      if (opts.token !== undefined && !request.headers.has('authorization')) {
        const token = typeof opts.token === 'function' ? await opts.token() : opts.token;
        request.headers.set('authorization', `Bearer ${token}`);
      }
      if (opts.userAgent && !request.headers.has('user-agent')) request.headers.set('user-agent', opts.userAgent);
      return request;
    },
  };
}

// An aborted request stays an abort (the caller asked for it); anything else fetch throws means no answer.
function unreachable(): Middleware {
  return {
    onError({ request, error }) {
      // Returning nothing lets openapi-fetch throw the original error.
      if (request.signal.aborted || (error as { name?: unknown } | null)?.name === 'AbortError') return;
      return HcpApiError.unreachable(request.url, error);
    },
  };
}

/** What openapi-fetch answers for one call. */
export interface FetchResult<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

/** The data of a success answer; any other answer throws its HcpApiError. */
export function unwrap<T>(result: FetchResult<T>): T {
  if (!result.response.ok) throw HcpApiError.fromResponse(result.response, result.error);
  return result.data as T;
}
