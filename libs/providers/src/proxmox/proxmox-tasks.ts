/**
 * Waiting on Proxmox within a call's deadline. Every long operation returns a task (UPID) that is
 * followed until it stops and whose exit status is read. Lock contention ("VM is locked", "can't lock
 * file ... got timeout") is retried with backoff until the call's deadline.
 */
import { HcpError } from '@hcp/domain';
import { pause } from '../common/pause';
import type { CallContext } from '../spi/provider-driver';
import type { ProxmoxCluster } from './proxmox-cluster';
import { ProxmoxApiError, ProxmoxTaskError, isLockError } from './proxmox-errors';
import { parseUpid } from './proxmox-format';
import { badAnswer } from './proxmox-translate';

/** Follows a task until it stops; throws ProxmoxTaskError unless it ended OK (or with warnings). */
export async function waitTask(
  cluster: ProxmoxCluster,
  upid: unknown,
  fallbackNode: string,
  ctx: CallContext,
): Promise<void> {
  // `POST .../config` and a few others may finish synchronously and answer null.
  if (upid === null || upid === undefined) return;
  if (typeof upid !== 'string') throw badAnswer('task id');
  const parsed = parseUpid(upid);
  const node = parsed?.node ?? fallbackNode;
  const taskType = parsed?.type ?? 'task';
  let delay = cluster.timing.taskPollMinMs;
  for (;;) {
    let st: { status?: string; exitstatus?: string } | null = null;
    try {
      st = await cluster.client.get('/nodes/{node}/tasks/{upid}/status', { node, upid }, ctx);
    } catch (err) {
      // The status is read again: a task may not be visible on the node for a moment after it was
      // started, and a read refused for a lock or a busy server says nothing of the task. Thrown on, a
      // lock error would make withLockRetry send the task's call again, though Proxmox took it.
      if (!unreadableForNow(err)) throw err;
    }
    if (st?.status === 'stopped') {
      const exit = typeof st.exitstatus === 'string' ? st.exitstatus : 'unexpected status';
      if (exit === 'OK' || /^WARNINGS: \d+$/.test(exit)) return;
      const log = await taskLog(cluster, node, upid, ctx);
      throw new ProxmoxTaskError(`the provider failed to ${taskVerb(taskType)}`, exit, {
        provider: { task: taskType, message: exit, ...(log.length > 0 ? { log } : {}) },
      });
    }
    if (Date.now() + delay >= ctx.deadline.getTime()) {
      throw new HcpError(
        'PROVIDER_TIMEOUT',
        `the provider did not finish the ${taskVerb(taskType)} before the deadline`,
        {
          reason: 'deadline',
          provider: { task: taskType },
        },
      );
    }
    await pause(delay, ctx, `task ${taskType}`);
    delay = Math.min(delay * 1.5, cluster.timing.taskPollMaxMs);
  }
}

/** A failed read of a task's status that may succeed if repeated. */
function unreadableForNow(err: unknown): boolean {
  if (!(err instanceof ProxmoxApiError)) return false;
  return (err.status === 400 && /no such task/i.test(err.allText)) || isLockError(err) || err.retryable;
}

/** The last lines of a task's log, for ops; [] when it cannot be read. */
async function taskLog(cluster: ProxmoxCluster, node: string, upid: string, ctx: CallContext): Promise<string[]> {
  try {
    const lines = await cluster.client.get<Array<{ n?: number; t?: string }>>(
      '/nodes/{node}/tasks/{upid}/log',
      { node, upid },
      ctx,
      {
        start: 0,
        limit: 500,
      },
    );
    return (lines ?? [])
      .map((l) => String(l.t ?? ''))
      .filter((t) => t !== '' && t !== 'no content')
      .slice(-10);
  } catch {
    return [];
  }
}

const TASK_VERBS: Record<string, string> = {
  qmclone: 'clone the image',
  qmcreate: 'create the VM',
  qmconfig: 'configure the VM',
  resize: 'resize the disk',
  qmstart: 'start the VM',
  qmstop: 'power off the VM',
  qmshutdown: 'shut down the VM',
  qmreboot: 'reboot the VM',
  qmreset: 'reset the VM',
  qmresume: 'resume the VM',
  qmdestroy: 'delete the VM',
};

/** What a task does, in words for the message (the task type itself is kept in details). */
function taskVerb(type: string): string {
  return TASK_VERBS[type] ?? 'run a task';
}

/** Repeats `fn` while Proxmox refuses it for a lock, with growing waits, until the deadline. */
export async function withLockRetry<T>(
  cluster: ProxmoxCluster,
  ctx: CallContext,
  step: string,
  fn: () => Promise<T>,
): Promise<T> {
  let delay = cluster.timing.lockRetryBaseMs;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      if (!isLockError(err)) throw err;
      const wait = delay * (0.75 + Math.random() * 0.5);
      if (Date.now() + wait >= ctx.deadline.getTime()) {
        throw new HcpError('PROVIDER_TIMEOUT', `the VM stayed locked on the provider until the deadline (${step})`, {
          reason: 'locked',
          ...(err as HcpError).details,
        });
      }
      await pause(wait, ctx, step);
      delay = Math.min(delay * 2, cluster.timing.lockRetryMaxMs);
    }
  }
}
