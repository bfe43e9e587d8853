/**
 * vCenter tasks followed to their end: `info.state` polled with growing waits until success or
 * error, never past the call's deadline or its abort. A task that fails for a transient reason
 * (TaskInProgress: another task holds the VM; ConcurrentAccess; InvalidState) is started again
 * with backoff while the deadline allows.
 */
import { HcpError } from '@hcp/domain';
import { pause } from '../common/pause';
import type { CallContext } from '../spi/provider-driver';
import { type MoRef, type SoapFields, type XmlNode, localizedFault, morefOf, text } from './soap-envelope';
import type { VsphereClient } from './vsphere-client';
import { VsphereFaultError, badAnswer, faultError, isTransientFault } from './vsphere-faults';
import { objectProperties } from './vsphere-inventory';

export interface TaskTiming {
  taskPollMinMs: number;
  taskPollMaxMs: number;
  retryBaseMs: number;
  retryMaxMs: number;
}

export const DEFAULT_TASK_TIMING: TaskTiming = {
  taskPollMinMs: 100,
  taskPollMaxMs: 2000,
  retryBaseMs: 250,
  retryMaxMs: 4000,
};

/** Follows `task` until it ends; its result, or its fault as a taxonomy error. */
export async function waitTask(
  client: VsphereClient,
  task: MoRef,
  operation: string,
  timing: TaskTiming,
  ctx: CallContext,
): Promise<unknown> {
  let delay = timing.taskPollMinMs;
  for (;;) {
    const props = await objectProperties(client, task, ['info.state', 'info.error', 'info.result'], ctx);
    if (!props) throw badAnswer('task vanished', operation);
    const state = text(props.get('info.state'));
    if (state === 'success') return props.get('info.result');
    if (state === 'error') throw faultError(localizedFault(props.get('info.error')), operation);
    if (Date.now() + delay >= ctx.deadline.getTime()) {
      throw new HcpError('PROVIDER_TIMEOUT', 'the provider did not finish the task before the deadline', {
        reason: 'deadline',
        provider: { operation },
      });
    }
    await pause(delay, ctx, operation);
    delay = Math.min(delay * 1.5, timing.taskPollMaxMs);
  }
}

/** Starts `method` (a *_Task method) and follows it; started again while it fails transiently. */
export async function runTask(
  client: VsphereClient,
  method: string,
  self: MoRef,
  args: SoapFields,
  timing: TaskTiming,
  ctx: CallContext,
): Promise<unknown> {
  return withTransientRetry(timing, ctx, method, async () => {
    const task = morefOf(await client.call(method, self, args, ctx));
    if (!task) throw badAnswer('task reference', method);
    return waitTask(client, task, method, timing, ctx);
  });
}

/** Repeats `fn` while it fails with a transient vim25 fault, with growing waits, until the deadline. */
export async function withTransientRetry<T>(
  timing: TaskTiming,
  ctx: CallContext,
  step: string,
  fn: () => Promise<T>,
): Promise<T> {
  let delay = timing.retryBaseMs;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      if (!(err instanceof VsphereFaultError && isTransientFault(err.fault.type))) throw err;
      const wait = delay * (0.75 + Math.random() * 0.5);
      if (Date.now() + wait >= ctx.deadline.getTime()) {
        throw new HcpError('PROVIDER_TIMEOUT', 'the VM stayed busy on the provider until the deadline', {
          reason: 'busy',
          ...(err.details ?? {}),
        });
      }
      await pause(wait, ctx, step);
      delay = Math.min(delay * 2, timing.retryMaxMs);
    }
  }
}

export type { XmlNode };
