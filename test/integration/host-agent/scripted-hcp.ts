import * as http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { ClaimedHostCall, HostCallOutcome } from '@hcp/host-protocol';
import { INTERNAL_PREFIX } from '@hcp/host-protocol';

export interface Answer {
  status: number;
  body?: unknown;
}

export interface HeldCall {
  call: ClaimedHostCall;
  /** When the lease was last given or renewed (ms); an older one than lease_ms is gone, as at HCP. */
  touchedAt: number;
  /** HCP handed the call to another claim: renewals and the outcome answer 409. */
  lost: boolean;
}

const envelope = (status: number, code: string, message: string): Answer => ({
  status,
  body: { error: { code, message, retryable: status >= 500 } },
});

/**
 * HCP's internal router as a host agent sees it, in a test: enrollment with one good token, a credential
 * that can be revoked, a queue of calls handed out by long-polled claims with leases that run out when not
 * renewed, renewals and outcomes recorded. Tests script the answers they need; it can go down and come
 * back on the same port (an HCP restart).
 */
export class ScriptedHcp {
  readonly enrollments: unknown[] = [];
  readonly heartbeats: unknown[] = [];
  readonly renewals: Array<{ call_id: string; at: number }> = [];
  readonly outcomeAttempts: Array<{ call_id: string; outcome: HostCallOutcome; answered: number }> = [];
  readonly held = new Map<string, HeldCall>();
  /** Answers to enrollment, in order; once used up, the good token enrolls. */
  readonly enrollAnswers: Answer[] = [];
  /** Answers to outcomes, in order, before the normal one. */
  readonly outcomeAnswers: Answer[] = [];
  goodToken = 'hcpb_good';
  credential = 'hcph_first';
  private revoked = false;
  private readonly queue: ClaimedHostCall[] = [];
  private readonly waiting = new Set<() => void>();
  private readonly sockets = new Set<Socket>();
  private server: http.Server | undefined;
  private port = 0;

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    const server = http.createServer((req, res) => void this.handle(req, res));
    server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
    await new Promise<void>((resolve) => server.listen(this.port, '127.0.0.1', resolve));
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
  }

  /** Down, as an HCP that died: open connections (long polls too) are cut. */
  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const socket of this.sockets) socket.destroy();
    for (const wake of this.waiting) wake();
    await closed;
  }

  revoke(): void {
    this.revoked = true;
    for (const wake of this.waiting) wake();
  }

  /** Queues a call for the next claim (a long-polling claim gets it at once). */
  offer(call: ClaimedHostCall): void {
    this.queue.push(call);
    for (const wake of this.waiting) wake();
  }

  outcomesOf(callId: string) {
    return this.outcomeAttempts.filter((o) => o.call_id === callId && o.answered === 204);
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    let body: Record<string, unknown> = {};
    try {
      body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : {};
    } catch {
      return this.send(res, envelope(400, 'INVALID_REQUEST', 'body is not JSON'));
    }
    const path = req.url ?? '';
    if (req.method !== 'POST' || !path.startsWith(INTERNAL_PREFIX)) {
      return this.send(res, { status: 404, body: 'Cannot find that' });
    }
    const route = path.slice(INTERNAL_PREFIX.length);
    if (route === '/enroll') return this.send(res, this.enroll(body));
    if (this.revoked || req.headers.authorization !== `Bearer ${this.credential}`) {
      return this.send(res, envelope(401, 'UNAUTHORIZED', 'host credential revoked'));
    }
    if (route === '/heartbeat') {
      this.heartbeats.push(body);
      return this.send(res, { status: 204 });
    }
    if (route === '/calls/claim') return this.send(res, await this.claim(body));
    const call = /^\/calls\/([^/]+)\/(renew|outcome)$/.exec(route);
    if (call) {
      const callId = decodeURIComponent(call[1]);
      return this.send(res, call[2] === 'renew' ? this.renew(callId) : this.outcome(callId, body));
    }
    return this.send(res, envelope(404, 'NOT_FOUND', 'no such internal route'));
  }

  private enroll(body: Record<string, unknown>): Answer {
    this.enrollments.push(body);
    const scripted = this.enrollAnswers.shift();
    if (scripted) return scripted;
    if (body.token !== this.goodToken) return envelope(401, 'UNAUTHORIZED', 'bootstrap token invalid or expired');
    return { status: 201, body: { host_id: 'host-1', cluster_id: 'cluster-1', credential: this.credential } };
  }

  private async claim(body: Record<string, unknown>): Promise<Answer> {
    const max = Number(body.max ?? 4);
    const waitMs = Number(body.wait_ms ?? 20_000);
    if (this.queue.length === 0) {
      await new Promise<void>((resolve) => {
        const wake = () => {
          clearTimeout(timer);
          this.waiting.delete(wake);
          resolve();
        };
        const timer = setTimeout(wake, waitMs);
        this.waiting.add(wake);
      });
    }
    if (this.revoked) return envelope(401, 'UNAUTHORIZED', 'host credential revoked');
    const calls = this.queue.splice(0, max);
    for (const call of calls) this.held.set(call.call_id, { call, touchedAt: Date.now(), lost: false });
    return { status: 200, body: { calls } };
  }

  private holding(callId: string): HeldCall | undefined {
    const held = this.held.get(callId);
    if (!held || held.lost) return undefined;
    if (Date.now() - held.touchedAt > held.call.lease_ms) {
      held.lost = true;
      return undefined;
    }
    return held;
  }

  private renew(callId: string): Answer {
    this.renewals.push({ call_id: callId, at: Date.now() });
    const held = this.holding(callId);
    if (!held) return envelope(409, 'CONFLICT', 'this host no longer holds the call');
    held.touchedAt = Date.now();
    return { status: 200, body: { lease_ms: held.call.lease_ms } };
  }

  private outcome(callId: string, body: Record<string, unknown>): Answer {
    const answer = this.outcomeAnswers.shift() ?? this.normalOutcome(callId);
    this.outcomeAttempts.push({
      call_id: callId,
      outcome: body as unknown as HostCallOutcome,
      answered: answer.status,
    });
    return answer;
  }

  private normalOutcome(callId: string): Answer {
    const held = this.holding(callId);
    if (!held) return envelope(409, 'CONFLICT', 'this host no longer holds the call');
    this.held.delete(callId);
    return { status: 204 };
  }

  private send(res: http.ServerResponse, answer: Answer): void {
    if (res.destroyed) return;
    if (answer.body === undefined) {
      res.writeHead(answer.status).end();
      return;
    }
    const text = typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body);
    res
      .writeHead(answer.status, { 'content-type': typeof answer.body === 'string' ? 'text/plain' : 'application/json' })
      .end(text);
  }
}
