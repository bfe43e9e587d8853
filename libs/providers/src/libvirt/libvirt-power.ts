/**
 * Power operations on a domain. A graceful stop asks the guest over ACPI and waits for it to power
 * itself off, then pulls the plug at the driver's timeout (never past the call's deadline). A graceful
 * reboot asks over ACPI and watches for the reboot; a guest that does not answer is reset.
 */
import { spawn } from 'node:child_process';
import { conflict, HcpError } from '@hcp/domain';
import type { CallContext } from '../spi/provider-driver';
import { domainState, type LibvirtHost } from './libvirt-domain';
import { isAlreadyRunning, isNotRunning } from './libvirt-errors';
import { checkCall, remainingMs, virsh } from './virsh';

const POLL_MS = 200;
/** How often the ACPI button is pressed again while the guest has not reacted (it may still be booting). */
const ACPI_REPEAT_MS = 3_000;
/** Kept for the destroy and describe after a graceful wait, so they still fit in the call's deadline. */
const RESERVE_MS = 5_000;

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });

/** How long a graceful step may wait: its own bound, less what the call needs after it. */
export function graceMs(ctx: CallContext, bound: number): number {
  const remaining = remainingMs(ctx);
  return Math.max(0, Math.min(bound, remaining - Math.min(RESERVE_MS, remaining / 4)));
}

export async function start(host: LibvirtHost, name: string, ctx: CallContext): Promise<void> {
  const { power } = await domainState(host, name, ctx);
  if (power === 'running') return;
  try {
    await virsh(host.virsh, [power === 'paused' ? 'resume' : 'start', name], ctx);
  } catch (err) {
    if (!isAlreadyRunning(err)) throw err;
  }
}

export async function destroy(host: LibvirtHost, name: string, ctx: CallContext): Promise<void> {
  try {
    await virsh(host.virsh, ['destroy', name], ctx);
  } catch (err) {
    if (!isNotRunning(err)) throw err;
  }
}

/** Polls until the domain is shut off; false when `ms` passed first. */
async function waitStopped(host: LibvirtHost, name: string, ctx: CallContext, ms: number): Promise<boolean> {
  const until = Date.now() + ms;
  for (;;) {
    checkCall(ctx, 'domstate');
    if ((await domainState(host, name, ctx)).power === 'stopped') return true;
    const left = until - Date.now();
    if (left <= 0) return false;
    await sleep(Math.min(POLL_MS, left), ctx.signal);
  }
}

export async function stop(host: LibvirtHost, name: string, force: boolean, ctx: CallContext): Promise<void> {
  if ((await domainState(host, name, ctx)).power === 'stopped') return;
  const wait = force ? 0 : graceMs(ctx, host.shutdown_timeout_ms);
  if (wait > 0) {
    // A guest still booting does not hear the power button yet: the press is repeated until it does.
    const until = Date.now() + wait;
    do {
      try {
        await virsh(host.virsh, ['shutdown', name, '--mode', 'acpi'], ctx);
      } catch (err) {
        if (isNotRunning(err)) return;
        throw err;
      }
      if (await waitStopped(host, name, ctx, Math.min(ACPI_REPEAT_MS, until - Date.now()))) return;
    } while (Date.now() < until);
  }
  await destroy(host, name, ctx);
}

async function requireRunning(host: LibvirtHost, name: string, ctx: CallContext): Promise<void> {
  if ((await domainState(host, name, ctx)).power !== 'running') throw conflict('the VM is not running');
}

export async function reset(host: LibvirtHost, name: string, ctx: CallContext): Promise<void> {
  try {
    await virsh(host.virsh, ['reset', name], ctx);
  } catch (err) {
    if (isNotRunning(err)) throw conflict('the VM is not running');
    throw err;
  }
}

export async function reboot(host: LibvirtHost, name: string, force: boolean, ctx: CallContext): Promise<void> {
  await requireRunning(host, name, ctx);
  if (force) return reset(host, name, ctx);
  // The same patience as a graceful stop: the guest has to go down before it comes back.
  const wait = graceMs(ctx, host.shutdown_timeout_ms);
  if (wait <= 0) return reset(host, name, ctx);
  const until = Date.now() + wait;
  const watch = await watchRebootEvent(host, name, ctx, wait);
  let rebooted: boolean | undefined;
  void watch.rebooted.then((seen) => {
    rebooted = seen;
  });
  try {
    // As for a stop, the request is repeated while a booting guest cannot hear it yet.
    do {
      try {
        await virsh(host.virsh, ['reboot', name, '--mode', 'acpi'], ctx);
      } catch (err) {
        if (isNotRunning(err)) throw conflict('the VM is not running');
        // The ACPI request refused (no ACPI, the guest's state): a reset is what is left.
        if (err instanceof HcpError && err.code !== 'PROVIDER_TIMEOUT') return await reset(host, name, ctx);
        throw err;
      }
      await Promise.race([watch.rebooted, sleep(Math.min(ACPI_REPEAT_MS, until - Date.now()), ctx.signal)]);
    } while (rebooted === undefined && Date.now() < until && !ctx.signal.aborted);
    if (!(await watch.rebooted)) await reset(host, name, ctx);
  } finally {
    watch.stop();
  }
}

interface RebootWatch {
  /** True when libvirt reported the domain's reboot, false when `ms` passed without one. */
  rebooted: Promise<boolean>;
  stop(): void;
}

/**
 * Listens to the domain's events (`virsh event --loop`) before the reboot is asked for. libvirt drops
 * events nobody listened to yet, so the listener first proves it is registered: it sees a
 * metadata-change event caused by writing a marker element into the live domain.
 */
async function watchRebootEvent(host: LibvirtHost, name: string, ctx: CallContext, ms: number): Promise<RebootWatch> {
  const child = spawn(
    host.virsh.virshPath,
    ['-c', host.virsh.uri, 'event', '--domain', name, '--all', '--loop', '--timeout', String(Math.ceil(ms / 1000) + 5)],
    { env: { ...process.env, LC_ALL: 'C', LANG: 'C' }, stdio: ['ignore', 'pipe', 'ignore'] },
  );
  const stop = () => {
    if (child.exitCode === null) child.kill('SIGKILL');
  };
  ctx.signal.addEventListener('abort', stop, { once: true });
  let output = '';
  const seen = (what: RegExp, within: number) =>
    new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => finish(false), within);
      const check = () => {
        if (what.test(output)) finish(true);
      };
      function finish(result: boolean) {
        clearTimeout(timer);
        child.stdout.off('data', check);
        child.off('exit', onExit);
        resolve(result);
      }
      const onExit = () => finish(what.test(output));
      child.stdout.on('data', check);
      child.on('exit', onExit);
      check();
    });
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk: string) => {
    output += chunk;
  });
  child.on('error', () => undefined);

  const marker = ['metadata', name, '--uri', 'https://hcp.dev/xmlns/libvirt/probe', '--key', 'hcpprobe', '--live'];
  let registered = false;
  for (let attempt = 0; attempt < 20 && !registered && child.exitCode === null; attempt++) {
    await virsh(host.virsh, [...marker, '--set', `<probe n='${attempt}'/>`], ctx);
    registered = await seen(/metadata-change/, 250);
  }
  await virsh(host.virsh, [...marker, '--remove'], ctx).catch(() => undefined);
  if (!registered) {
    stop();
    // No event stream to watch: a graceful request that cannot be checked becomes a reset.
    return { rebooted: Promise.resolve(false), stop };
  }
  output = '';
  return { rebooted: seen(/event 'reboot'/, ms), stop };
}
