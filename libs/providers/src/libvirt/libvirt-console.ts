/**
 * Consoles: the domain's own VNC server (QEMU's), with a fresh password per session. The domain is
 * defined with a random password nobody knows, so VNC authentication is always on; each session sets
 * a new one through the QEMU monitor and lets it expire soon, so it is good only to connect now.
 */
import { connect } from 'node:net';
import type { ConsoleEndpoint } from '@hcp/host-protocol';
import { conflict, providerTimeout, providerUnavailable } from '@hcp/domain';
import type { CallContext, ProviderConsole } from '../spi/provider-driver';
import { randomVncPassword } from './libvirt-create';
import { domainState, type LibvirtHost } from './libvirt-domain';
import { isNotRunning } from './libvirt-errors';
import { checkCall, remainingMs, virsh, type VirshOptions } from './virsh';

/** Seconds a session's password is good for connecting (a connection made in time stays open). */
export const CONSOLE_PASSWORD_TTL_S = 60;

async function monitor(options: VirshOptions, name: string, command: string, ctx: CallContext): Promise<void> {
  try {
    // HMP answers errors as text with exit status 0: any output is a refusal.
    const out = await virsh(options, ['qemu-monitor-command', name, '--hmp', command], ctx);
    if (out.trim())
      throw providerUnavailable('the VM console could not be prepared', {
        provider: { operation: 'qemu-monitor-command', message: out.trim().slice(0, 500) },
      });
  } catch (err) {
    if (isNotRunning(err)) throw conflict('the VM is not running');
    throw err;
  }
}

/** `vncdisplay` prints `127.0.0.1:0` (display 0 = port 5900), or `:0` when listening everywhere. */
export function vncPort(display: string): number {
  const m = /:(\d+)\s*$/.exec(display.trim());
  if (!m) throw providerUnavailable('the VM has no console display');
  return 5900 + Number(m[1]);
}

export async function consoleEndpoint(host: LibvirtHost, name: string, ctx: CallContext): Promise<ConsoleEndpoint> {
  if ((await domainState(host, name, ctx)).power !== 'running') throw conflict('the VM is not running');
  const password = randomVncPassword();
  await monitor(host.virsh, name, `set_password vnc ${password}`, ctx);
  await monitor(host.virsh, name, `expire_password vnc +${CONSOLE_PASSWORD_TTL_S}`, ctx);
  let display: string;
  try {
    display = await virsh(host.virsh, ['vncdisplay', name], ctx);
  } catch (err) {
    if (isNotRunning(err)) throw conflict('the VM is not running');
    throw err;
  }
  // A server listening on every address is reached on loopback from the agent's own host.
  const listen = ['0.0.0.0', '::', ''].includes(host.vnc_listen) ? '127.0.0.1' : host.vnc_listen;
  return { host: listen, port: vncPort(display), password };
}

/** Connects to an endpoint within the call's deadline. */
export function connectConsole(endpoint: ConsoleEndpoint, ctx: CallContext): Promise<ProviderConsole> {
  checkCall(ctx, 'console');
  return new Promise((resolve, reject) => {
    const socket = connect({ host: endpoint.host, port: endpoint.port });
    const fail = (reason: string) => {
      clearTimeout(timer);
      socket.destroy();
      const details = { provider: { operation: 'console', reason } };
      reject(
        reason === 'deadline'
          ? providerTimeout('the VM console did not answer in time', details)
          : providerUnavailable('the VM console is unreachable', details),
      );
    };
    const timer = setTimeout(() => fail('deadline'), Math.max(0, remainingMs(ctx)));
    socket.once('error', (err: NodeJS.ErrnoException) => fail(err.code ?? 'error'));
    socket.once('connect', () => {
      clearTimeout(timer);
      socket.removeAllListeners('error');
      socket.on('error', () => undefined);
      resolve({ protocol: 'rfb', stream: socket, rfb_password: endpoint.password });
    });
  });
}
