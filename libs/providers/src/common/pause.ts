import { HcpError } from '@hcp/domain';
import type { CallContext } from '../spi/provider-driver';

/** Sleeps, but never past the deadline and not after an abort. */
export function pause(ms: number, ctx: CallContext, step: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const over = (why: 'aborted' | 'deadline') =>
      new HcpError(
        'PROVIDER_TIMEOUT',
        why === 'aborted'
          ? `the provider ${step} was aborted`
          : `the provider ${step} did not finish before the deadline`,
        {
          reason: why,
        },
      );
    if (ctx.signal.aborted) return reject(over('aborted'));
    const left = ctx.deadline.getTime() - Date.now();
    if (left <= 0) return reject(over('deadline'));
    const onAbort = () => {
      clearTimeout(timer);
      reject(over('aborted'));
    };
    const timer = setTimeout(
      () => {
        ctx.signal.removeEventListener('abort', onAbort);
        if (ms > left) reject(over('deadline'));
        else resolve();
      },
      Math.min(ms, left),
    );
    ctx.signal.addEventListener('abort', onAbort, { once: true });
  });
}
