import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { DataSource } from 'typeorm';
import type { ClaimedHostCall, HostCallOutcome, HostCallRequest } from '@hcp/host-protocol';
import { queryReturning } from '../../platform/persistence/returning';

/** A call as its asker sees it: still open, or finished with the agent's outcome. */
export type HostCallStatus =
  | { status: 'queued' | 'claimed'; claims: number }
  | { status: 'succeeded' | 'failed'; claims: number; outcome: HostCallOutcome };

interface CallRow {
  id: string;
  request: HostCallRequest;
  deadline: Date;
  claims: number;
  trace_id: string | null;
}

/**
 * The table of driver calls between HCP and its host agents (host_calls). HCP queues a call for one host;
 * that host's agent claims it under a lease, renews it while it runs and reports the outcome. Every change
 * after the queueing is guarded by the host, so an agent can act on its own calls only, and a call whose
 * lease ran out (the agent died) is claimed again by that host's agent when it comes back. Calls about one
 * VM go one at a time, oldest first. Works across processes through the table; `changes` only shortens the
 * waits inside one process.
 */
@Injectable()
export class HostCallQueue {
  private readonly changes = new EventEmitter().setMaxListeners(0);

  constructor(private readonly db: DataSource) {}

  async submit(
    hostId: string,
    request: HostCallRequest,
    options: { deadline: Date; trace_id?: string },
  ): Promise<string> {
    const id = randomUUID();
    await this.db.query(
      `INSERT INTO host_calls (id, host_id, hcp_id, op, request, status, deadline, trace_id)
       VALUES ($1, $2, $3, $4, $5::jsonb, 'queued', $6, $7)`,
      [id, hostId, hcpIdOf(request), request.op, JSON.stringify(request), options.deadline, options.trace_id ?? null],
    );
    this.changes.emit(`host:${hostId}`);
    return id;
  }

  /**
   * Claims up to `max` due calls of this host: queued ones, and claimed ones whose lease ran out. A call
   * waits while an older open call about the same VM exists (unless that one's deadline passed) or a
   * claim on one is still live.
   */
  async claim(hostId: string, max: number, leaseMs: number): Promise<ClaimedHostCall[]> {
    const rows = await queryReturning<CallRow>(
      this.db,
      `WITH due AS (
         SELECT c.id FROM host_calls c
         WHERE c.host_id = $1 AND c.deadline > now()
           AND (c.status = 'queued' OR (c.status = 'claimed' AND c.lease_expires_at < now()))
           AND NOT EXISTS (
             SELECT 1 FROM host_calls o
             WHERE o.host_id = c.host_id AND o.hcp_id = c.hcp_id AND o.id <> c.id AND o.deadline > now()
               AND ((o.status = 'claimed' AND o.lease_expires_at >= now())
                    OR (o.status IN ('queued', 'claimed') AND o.created_at < c.created_at)))
         ORDER BY c.created_at
         LIMIT $2
         FOR UPDATE SKIP LOCKED)
       UPDATE host_calls q
       SET status = 'claimed', claims = q.claims + 1, updated_at = now(),
           lease_expires_at = now() + make_interval(secs => $3::double precision / 1000)
       FROM due WHERE q.id = due.id
       RETURNING q.id, q.request, q.deadline, q.claims, q.trace_id`,
      [hostId, max, leaseMs],
    );
    return rows.map((r) => ({
      call_id: r.id,
      request: r.request,
      deadline: new Date(r.deadline).toISOString(),
      lease_ms: leaseMs,
      reclaimed: r.claims > 1,
      ...(r.trace_id ? { trace_id: r.trace_id } : {}),
    }));
  }

  /** Extends this host's claim; false when the call is not (any longer) claimed by it. */
  async renew(hostId: string, callId: string, leaseMs: number): Promise<boolean> {
    const rows = await queryReturning(
      this.db,
      `UPDATE host_calls SET lease_expires_at = now() + make_interval(secs => $3::double precision / 1000), updated_at = now()
       WHERE id = $1 AND host_id = $2 AND status = 'claimed' RETURNING id`,
      [callId, hostId, leaseMs],
    );
    return rows.length === 1;
  }

  /**
   * Records the agent's outcome; false when this host does not hold the call. An outcome that arrives
   * after the lease ran out is still taken while nobody claimed the call again: the work is done.
   */
  async report(hostId: string, callId: string, outcome: HostCallOutcome): Promise<boolean> {
    const rows = await queryReturning(
      this.db,
      `UPDATE host_calls SET status = $3, outcome = $4::jsonb, lease_expires_at = NULL, updated_at = now()
       WHERE id = $1 AND host_id = $2 AND status = 'claimed' RETURNING id`,
      [callId, hostId, outcome.status, JSON.stringify(outcome)],
    );
    if (rows.length === 1) this.changes.emit(`call:${callId}`);
    return rows.length === 1;
  }

  async status(callId: string): Promise<HostCallStatus | null> {
    const rows: Array<{ status: HostCallStatus['status']; claims: number; outcome: HostCallOutcome | null }> =
      await this.db.query(`SELECT status, claims, outcome FROM host_calls WHERE id = $1`, [callId]);
    const row = rows[0];
    if (!row) return null;
    if (row.status === 'succeeded' || row.status === 'failed')
      return { status: row.status, claims: row.claims, outcome: row.outcome! };
    return { status: row.status, claims: row.claims };
  }

  /**
   * Its asker gave up on a call: one no agent took yet is withdrawn (it must not run later, after newer
   * calls about the same VM); one being run is left to finish, as any driver call is idempotent.
   */
  async withdraw(callId: string): Promise<void> {
    await this.db.query(
      `UPDATE host_calls SET status = 'failed', updated_at = now(),
         outcome = '{"status":"failed","error":{"code":"CONFLICT","message":"withdrawn by HCP before an agent took it","retryable":false}}'::jsonb
       WHERE id = $1 AND status = 'queued'`,
      [callId],
    );
  }

  /** Finished calls are kept for a while for diagnosis, then removed. */
  async prune(olderThanMs: number): Promise<number> {
    const rows = await queryReturning(
      this.db,
      `DELETE FROM host_calls WHERE (status IN ('succeeded', 'failed') AND updated_at < now() - make_interval(secs => $1::double precision / 1000))
         OR deadline < now() - make_interval(secs => $1::double precision / 1000)
       RETURNING id`,
      [olderThanMs],
    );
    return rows.length;
  }

  /** Resolves on the next change of `topic` in this process, or after `ms` (other processes are polled). */
  waitForChange(topic: `host:${string}` | `call:${string}`, ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.changes.off(topic, done);
        signal?.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.changes.once(topic, done);
      signal?.addEventListener('abort', done, { once: true });
    });
  }
}

function hcpIdOf(request: HostCallRequest): string | null {
  if (request.op === 'create') return request.spec.hcp_id;
  return 'hcp_id' in request ? request.hcp_id : null;
}
