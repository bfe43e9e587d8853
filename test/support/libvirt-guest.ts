/**
 * The libvirt test guest and the libvirt the tests run against (qemu:///system unless
 * HCP_TEST_LIBVIRT_URI says otherwise). The guest is a real bootable disk made from Debian's kernel and
 * busybox (libvirt-guest/build-guest.sh); it is built once and cached, keyed by its inputs.
 */
import { execFile, execFileSync } from 'node:child_process';
import { createServer, type Server } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export const LIBVIRT_URI = process.env.HCP_TEST_LIBVIRT_URI ?? 'qemu:///system';
const GUEST_DIR = join(__dirname, 'libvirt-guest');
const LOCK = process.env.HCP_TEST_GUEST_LOCK ?? '/var/cache/hcp-test-guest.lock';

export interface TestGuest {
  pool: string;
  /** A base volume whose guest powers off on the ACPI power button. */
  image_ref: string;
  /** The same guest, deaf to ACPI: a graceful stop must end in a power-off. */
  deaf_image_ref: string;
}

/** Whether libvirt answers here (synchronously: suites decide at load time whether to run). */
export function libvirtAvailable(): boolean {
  try {
    execFileSync('virsh', ['-c', LIBVIRT_URI, 'version'], { timeout: 10_000, stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/**
 * `describe` when libvirt is reachable; otherwise a suite that fails in CI (CI=true) and is skipped
 * with a message elsewhere.
 */
export function describeWithLibvirt(name: string, body: () => void): void {
  if (libvirtAvailable()) {
    describe(name, body);
    return;
  }
  if (process.env.CI === 'true') {
    describe(name, () => {
      it('needs libvirt (qemu:///system), which CI installs in .ci/run', () => {
        throw new Error(`libvirt is not reachable at ${LIBVIRT_URI}`);
      });
    });
    return;
  }
  console.warn(`skipping "${name}": libvirt is not reachable at ${LIBVIRT_URI} (set CI=true to fail instead)`);
  describe.skip(name, body);
}

let ensured: Promise<TestGuest> | undefined;

/** Builds the guest if needed, creates and starts its pool, uploads its base volumes. */
export function ensureTestGuest(): Promise<TestGuest> {
  ensured ??= run('flock', [LOCK, join(GUEST_DIR, 'ensure-guest.sh'), LIBVIRT_URI], {
    timeout: 600_000,
    maxBuffer: 16 * 1024 * 1024,
  }).then(({ stdout }) => {
    const [pool, image_ref, deaf_image_ref] = stdout.trim().split('\n').pop()!.split(' ');
    return { pool, image_ref, deaf_image_ref };
  });
  return ensured;
}

/** Runs virsh on the test URI; resolves with stdout, rejects with virsh's error. */
export async function virshOut(args: string[]): Promise<string> {
  const { stdout } = await run('virsh', ['-c', LIBVIRT_URI, '-q', ...args], { timeout: 60_000 });
  return stdout;
}

/** `virsh` that answers with stdout, or null when virsh fails (the thing is absent). */
export async function virshOrNull(args: string[]): Promise<string | null> {
  return virshOut(args).catch(() => null);
}

export async function domainExists(name: string): Promise<boolean> {
  return (await virshOrNull(['domstate', name])) !== null;
}

export async function volumeExists(pool: string, volume: string): Promise<boolean> {
  return (await virshOrNull(['vol-info', '--pool', pool, volume])) !== null;
}

/** `domstate --reason` as `shut off (shutdown)`, `running (booted)`, ... */
export async function domainStateReason(name: string): Promise<string> {
  return (await virshOut(['domstate', name, '--reason'])).trim();
}

/** Removes a test VM's domain and overlay whatever state they are in (afterAll cleanup). */
export async function removeTestVm(pool: string, hcpId: string): Promise<void> {
  await virshOrNull(['destroy', `hcp-${hcpId}`]);
  await virshOrNull(['undefine', `hcp-${hcpId}`, '--nvram']);
  await virshOrNull(['vol-delete', '--pool', pool, `hcp-${hcpId}.qcow2`]);
  for (const log of [`/var/log/libvirt/qemu/hcp-${hcpId}.log`, `/var/log/libvirt/qemu/hcp-${hcpId}.serial.log`])
    rmSync(log, { force: true });
}

/** A libvirt URI whose socket accepts connections and never answers: calls must time out. */
export async function hangingLibvirt(): Promise<{ uri: string; close(): Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), 'hcp-hang-'));
  const path = join(dir, 'libvirt-sock');
  const held: import('node:net').Socket[] = [];
  const server: Server = createServer((socket) => {
    held.push(socket);
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(path, resolve));
  return {
    uri: `qemu+unix:///system?socket=${path}`,
    async close() {
      for (const s of held) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
