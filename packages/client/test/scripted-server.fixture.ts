import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface SeenRequest {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
  at: number;
}

export interface ScriptedAnswer {
  status: number;
  headers?: Record<string, string>;
  /** JSON-encoded unless a string. */
  body?: unknown;
}

/** What the server does with one request: answer it, or never answer (a hung server). */
export type Script = (req: SeenRequest, index: number) => ScriptedAnswer | 'hang';

/**
 * A real HTTP server on 127.0.0.1 that answers each request as its script says and remembers what it
 * was asked: the client's helpers are tested over real sockets, not a mocked fetch.
 */
export class ScriptedServer {
  readonly requests: SeenRequest[] = [];
  private readonly hung = new Set<ServerResponse>();

  private constructor(
    private readonly server: Server,
    readonly baseUrl: string,
  ) {}

  static async start(script: Script): Promise<ScriptedServer> {
    let self: ScriptedServer | undefined;
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const seen: SeenRequest = {
          method: req.method ?? '',
          url: req.url ?? '',
          headers: req.headers,
          body: Buffer.concat(chunks).toString('utf8'),
          at: Date.now(),
        };
        self!.requests.push(seen);
        let answer: ScriptedAnswer | 'hang';
        try {
          answer = script(seen, self!.requests.length - 1);
        } catch (err) {
          answer = { status: 599, body: `script failed: ${String(err)}` };
        }
        if (answer === 'hang') {
          self!.hung.add(res);
          return;
        }
        const body =
          answer.body === undefined ? '' : typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body);
        res.writeHead(answer.status, {
          ...(typeof answer.body === 'string' || answer.body === undefined
            ? {}
            : { 'content-type': 'application/json' }),
          ...answer.headers,
        });
        res.end(body);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    self = new ScriptedServer(server, `http://127.0.0.1:${port}`);
    return self;
  }

  async close(): Promise<void> {
    for (const res of this.hung) res.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** A port on 127.0.0.1 that nothing listens on (bound, then released). */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** HCP's error envelope (docs/API.md). */
export function envelope(code: string, message: string, details?: unknown): unknown {
  return { error: { code, message, ...(details === undefined ? {} : { details }), trace_id: 'trace-1' } };
}

/** A job as HCP answers it, in the given status. */
export function jobIn(status: 'queued' | 'running' | 'succeeded' | 'failed', attempts = 0): Record<string, unknown> {
  const finished = status === 'succeeded' || status === 'failed';
  return {
    id: 'j1',
    project_id: 'p1',
    type: 'vm.create',
    status,
    resource_id: 'vm-1',
    attempts,
    created_at: '2026-12-04T09:00:00.000Z',
    started_at: status === 'queued' ? null : '2026-12-04T09:00:01.000Z',
    finished_at: finished ? '2026-12-04T09:00:02.000Z' : null,
    error: status === 'failed' ? { code: 'PROVIDER_TIMEOUT', message: 'took too long', retryable: true } : null,
    trace_id: 'trace-1',
    deadline: '2026-12-04T10:00:00.000Z',
  };
}
