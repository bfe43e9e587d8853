/**
 * A typed runner of `virsh`, libvirt's own CLI: one child process per command, killed at the call's
 * deadline or when its signal fires. virsh rather than a native binding: the Node binding lacks reboot,
 * reset and the storage calls, and needs a native build on every host.
 */
import { execFile } from 'node:child_process';
import type { CallContext } from '../spi/provider-driver';
import { virshFailure, virshNotStarted, virshTimeout } from './libvirt-errors';

export interface VirshOptions {
  uri: string;
  virshPath: string;
}

export interface VirshRun {
  /** Ends the command earlier than the call's deadline (a bounded wait inside a longer call). */
  timeoutMs?: number;
}

/** Largest output kept: `list`, `dumpxml` and `pool-info` answers are far below this. */
const MAX_OUTPUT = 16 * 1024 * 1024;

/** Refuses a call whose deadline has passed or whose signal fired, before anything is started. */
export function checkCall(ctx: CallContext, operation: string): void {
  if (ctx.signal.aborted) throw virshTimeout(operation, 'aborted');
  if (ctx.deadline.getTime() <= Date.now()) throw virshTimeout(operation, 'deadline');
}

export function remainingMs(ctx: CallContext): number {
  return ctx.deadline.getTime() - Date.now();
}

/** Runs `virsh -c <uri> -q <args...>` and resolves with its stdout; failures are taxonomy errors. */
export function virsh(options: VirshOptions, args: string[], ctx: CallContext, run: VirshRun = {}): Promise<string> {
  const operation = args[0] ?? 'virsh';
  checkCall(ctx, operation);
  const budget = Math.min(remainingMs(ctx), run.timeoutMs ?? Number.POSITIVE_INFINITY);
  return new Promise<string>((resolve, reject) => {
    let ended: 'deadline' | 'aborted' | undefined;
    const child = execFile(
      options.virshPath,
      ['-c', options.uri, '-q', ...args],
      // LC_ALL=C: the messages matched in libvirt-errors.ts are the untranslated ones.
      { maxBuffer: MAX_OUTPUT, env: { ...process.env, LC_ALL: 'C', LANG: 'C' }, encoding: 'utf8' },
      (err, stdout, stderr) => {
        clearTimeout(timer);
        ctx.signal.removeEventListener('abort', onAbort);
        if (ended) return reject(virshTimeout(operation, ended));
        if (!err) return resolve(stdout);
        const code = (err as NodeJS.ErrnoException).code;
        if (typeof code === 'string') return reject(virshNotStarted(operation, code));
        reject(virshFailure(operation, stderr || err.message));
      },
    );
    const stop = (why: 'deadline' | 'aborted') => {
      ended ??= why;
      child.kill('SIGKILL');
    };
    const onAbort = () => stop('aborted');
    const timer = setTimeout(() => stop('deadline'), Math.max(0, budget));
    ctx.signal.addEventListener('abort', onAbort, { once: true });
    child.stdin?.end();
  });
}
