import { createHcpClient, type HcpClient, waitForJob } from '@hcp/client';

/**
 * A small HTTP client for e2e tests: JSON in and out, with a bearer token, for any path and any body
 * (hostile and malformed requests too). Calls the API defines go through `typed()`, the generated
 * @hcp/client, so a suite written with it fails to compile when the API changes under it.
 */
export interface ApiResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
}

export class ApiClient {
  constructor(
    private readonly baseUrl: string,
    private readonly token?: string,
  ) {}

  as(token: string | undefined): ApiClient {
    return new ApiClient(this.baseUrl, token);
  }

  /** @hcp/client for the same HCP and caller: typed paths, bodies and answers. */
  typed(): HcpClient {
    return createHcpClient({ baseUrl: this.baseUrl, token: this.token, userAgent: 'hcp-e2e' });
  }

  /** The same caller against another HCP process (e.g. after a restart on a new port). */
  asBase(baseUrl: string): ApiClient {
    return new ApiClient(baseUrl, this.token);
  }

  get<T = any>(path: string, headers: Record<string, string> = {}): Promise<ApiResponse<T>> {
    return this.request<T>('GET', path, undefined, headers);
  }

  post<T = any>(path: string, body?: unknown, headers: Record<string, string> = {}): Promise<ApiResponse<T>> {
    return this.request<T>('POST', path, body, headers);
  }

  patch<T = any>(path: string, body?: unknown): Promise<ApiResponse<T>> {
    return this.request<T>('PATCH', path, body);
  }

  delete<T = any>(path: string): Promise<ApiResponse<T>> {
    return this.request<T>('DELETE', path);
  }

  /** Sends a raw body (for malformed JSON tests). */
  async raw(method: string, path: string, body: string, headers: Record<string, string> = {}): Promise<ApiResponse> {
    const res = await fetch(`${this.baseUrl}${path}`, {
      method,
      body,
      headers: { ...this.auth(), 'content-type': 'application/json', ...headers },
    });
    return { status: res.status, headers: res.headers, body: await parse(res) };
  }

  async request<T = any>(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<ApiResponse<T>> {
    const res = await fetch(`${this.baseUrl}${path}`, {
      method,
      headers: { ...this.auth(), ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
      body: body !== undefined ? JSON.stringify(body) : undefined,
    });
    return { status: res.status, headers: res.headers, body: (await parse(res)) as T };
  }

  private auth(): Record<string, string> {
    return this.token ? { authorization: `Bearer ${this.token}` } : {};
  }
}

async function parse(res: Response): Promise<unknown> {
  const text = await res.text();
  try {
    return text ? JSON.parse(text) : null;
  } catch {
    return text;
  }
}

/** Polls until `check` returns a value (not undefined), or fails with the last seen state. */
export async function eventually<T>(check: () => Promise<T | undefined>, what: string, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
}

/**
 * Waits until a job is finished and returns it, through @hcp/client's waitForJob (what a gateway uses):
 * unreachable, 429/502/503/504 answers and a job the read model does not have yet are read again;
 * another refusal fails at once. Polls quickly: tests wait on short simulator jobs.
 */
export async function jobFinished(
  api: ApiClient | HcpClient,
  projectId: string,
  jobId: string,
  timeoutMs = 30_000,
): Promise<any> {
  const client = api instanceof ApiClient ? api.typed() : api;
  return waitForJob(client, projectId, jobId, {
    timeoutMs,
    initialDelayMs: 50,
    maxDelayMs: 500,
    notFoundGraceMs: timeoutMs,
  });
}
