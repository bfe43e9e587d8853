import { randomUUID } from 'node:crypto';
import { sleep } from './chaos-postgres';

export type OpKind = 'create' | 'start' | 'stop' | 'reboot' | 'delete';

/** One logical tenant request: one idempotency key, sent until it gets a final answer. */
export interface LedgerEntry {
  key: string;
  project: string;
  kind: OpKind;
  vmId?: string;
  name?: string;
  sentAt: number;
  /** Every answer, in order: a status code, or the transport error's name. */
  answers: string[];
  /** Distinct job ids answered 202 for this key (more than one is a duplicated job). */
  jobIds: string[];
  final?: { status: number; code?: string; message?: string };
  acceptedAt?: number;
}

export interface CatalogChoice {
  zone: string;
  image_id: string;
  flavor_id: string;
}

export interface WorkloadOptions {
  projects: string[];
  concurrency: number;
  maxVmsPerProject: number;
  /** How long one key is retried before the client gives up on it. */
  giveUpAfterMs: number;
  choice: CatalogChoice;
  urls: () => string[];
  token: (project: string) => string;
  onSuccess: (at: number) => void;
}

const RETRIED = new Set([500, 502, 503, 504, 429]);

/**
 * A stream of random tenant operations in several projects, with the retry policy of a gateway: an
 * idempotency key per operation, the same key and body again on 5xx, 429 or a broken connection
 * (honouring Retry-After), another backend on a refused connection.
 */
export class Workload {
  readonly ledger: LedgerEntry[] = [];
  private readonly vms = new Map<string, Set<string>>();
  private running = false;
  private loops: Promise<void>[] = [];
  private seq = 0;

  constructor(private readonly options: WorkloadOptions) {
    for (const p of options.projects) this.vms.set(p, new Set());
  }

  start(): void {
    this.running = true;
    for (let i = 0; i < this.options.concurrency; i++) this.loops.push(this.loop(i));
  }

  /** Stops sending new operations and waits for the ones in flight to get their final answer. */
  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
  }

  private async loop(worker: number): Promise<void> {
    while (this.running) {
      const project = pick(this.options.projects);
      const entry = this.nextOperation(project, worker);
      if (entry) await this.send(entry);
      await sleep(50 + Math.random() * 150);
    }
  }

  private nextOperation(project: string, worker: number): LedgerEntry | undefined {
    const live = [...(this.vms.get(project) ?? [])];
    const roll = Math.random();
    const base = { key: `chaos-${randomUUID()}`, project, sentAt: Date.now(), answers: [], jobIds: [] };
    if (live.length === 0 || (live.length < this.options.maxVmsPerProject && roll < 0.35)) {
      return { ...base, kind: 'create', name: `chaos-${worker}-${++this.seq}-${base.key.slice(-6)}` };
    }
    const vmId = pick(live);
    const kind: OpKind = roll < 0.5 ? 'stop' : roll < 0.7 ? 'start' : roll < 0.85 ? 'reboot' : 'delete';
    return { ...base, kind, vmId };
  }

  private request(entry: LedgerEntry): { method: string; path: string; body?: unknown } {
    const vms = `/v1/projects/${entry.project}/vms`;
    switch (entry.kind) {
      case 'create':
        return {
          method: 'POST',
          path: vms,
          body: { name: entry.name, ...this.options.choice, tags: { chaos: 'yes' } },
        };
      case 'delete':
        return { method: 'DELETE', path: `${vms}/${entry.vmId}` };
      case 'start':
        return { method: 'POST', path: `${vms}/${entry.vmId}/actions/start`, body: {} };
      default:
        return { method: 'POST', path: `${vms}/${entry.vmId}/actions/${entry.kind}`, body: { force: false } };
    }
  }

  private async send(entry: LedgerEntry): Promise<void> {
    this.ledger.push(entry);
    const { method, path, body } = this.request(entry);
    const giveUpAt = Date.now() + this.options.giveUpAfterMs;
    let attempt = 0;
    let backendOffset = Math.floor(Math.random() * 1000);
    while (Date.now() < giveUpAt) {
      const urls = this.options.urls();
      const url = urls[(backendOffset + attempt) % urls.length];
      attempt++;
      let status: number;
      let answer: any;
      let retryAfterMs = Math.min(4_000, 200 * 2 ** Math.min(attempt, 5));
      try {
        const res = await fetch(`${url}${path}`, {
          method,
          headers: {
            authorization: `Bearer ${this.options.token(entry.project)}`,
            'idempotency-key': entry.key,
            ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
          },
          body: body !== undefined ? JSON.stringify(body) : undefined,
          signal: AbortSignal.timeout(20_000),
        });
        status = res.status;
        const text = await res.text();
        answer = text ? safeJson(text) : null;
        const retryAfter = Number(res.headers.get('retry-after'));
        if (Number.isFinite(retryAfter) && retryAfter > 0) retryAfterMs = Math.min(retryAfter * 1000, 5_000);
      } catch (error) {
        entry.answers.push(transportError(error));
        backendOffset++;
        await sleep(retryAfterMs);
        continue;
      }
      // "still in progress; retry later": the key's first request died with its process; a gateway
      // that reads the answer retries, and HCP takes the abandoned claim over after a while.
      const inProgress = status === 409 && /still in progress/.test(String(answer?.error?.message));
      entry.answers.push(inProgress ? '409-in-progress' : String(status));
      if (status === 202) {
        const jobId = String(answer?.job_id);
        if (!entry.jobIds.includes(jobId)) entry.jobIds.push(jobId);
        entry.vmId ??= answer?.resource_id;
        entry.acceptedAt ??= Date.now();
        entry.final = { status };
        this.options.onSuccess(Date.now());
        this.track(entry);
        return;
      }
      if (RETRIED.has(status) || inProgress) {
        await sleep(retryAfterMs);
        continue;
      }
      entry.final = { status, code: answer?.error?.code, message: answer?.error?.message };
      // A refusal is an answer too: HCP is serving.
      if (status === 409 || status === 404 || status === 422) this.options.onSuccess(Date.now());
      if (status === 404 && entry.vmId) this.vms.get(entry.project)?.delete(entry.vmId);
      return;
    }
  }

  private track(entry: LedgerEntry): void {
    const set = this.vms.get(entry.project);
    if (!set || !entry.vmId) return;
    if (entry.kind === 'create') set.add(entry.vmId);
    if (entry.kind === 'delete') set.delete(entry.vmId);
  }
}

function pick<T>(items: T[]): T {
  return items[Math.floor(Math.random() * items.length)] as T;
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function transportError(error: unknown): string {
  const cause = (error as { cause?: { code?: string } })?.cause?.code;
  if (cause) return cause;
  if (error instanceof Error && error.name === 'TimeoutError') return 'TIMEOUT';
  return error instanceof Error ? error.name : 'ERROR';
}
