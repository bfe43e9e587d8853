import { type ChildProcess, spawn, type SpawnOptions } from 'node:child_process';
import { rmSync } from 'node:fs';

/**
 * Every process and folder the chaos run creates, so that they go away however the run ends: a normal
 * end, an exception, Ctrl-C or SIGTERM. Children run in their own process group (detached) so one
 * signal reaches whatever they spawn in turn.
 */
const groups = new Set<number>();
const pids = new Set<number>();
const folders = new Set<string>();
let installed = false;

export function spawnTracked(command: string, args: string[], options: SpawnOptions): ChildProcess {
  installExitHandlers();
  const child = spawn(command, args, { ...options, detached: true });
  if (child.pid !== undefined) {
    const pid = child.pid;
    groups.add(pid);
    child.once('exit', () => groups.delete(pid));
  }
  return child;
}

/** A process we did not spawn ourselves (the postmaster, which lives in its own session). */
export function trackPid(pid: number): void {
  installExitHandlers();
  pids.add(pid);
}

export function untrackPid(pid: number): void {
  pids.delete(pid);
}

export function trackFolder(folder: string): void {
  installExitHandlers();
  folders.add(folder);
}

export function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // already gone
  }
}

/** Kills everything still tracked and removes the folders; synchronous so it can run in 'exit'. */
export function killEverything(): void {
  for (const pid of groups) killGroup(pid, 'SIGKILL');
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  groups.clear();
  pids.clear();
  for (const folder of folders) rmSync(folder, { recursive: true, force: true });
  folders.clear();
}

function installExitHandlers(): void {
  if (installed) return;
  installed = true;
  process.on('exit', killEverything);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.on(signal, () => {
      process.stderr.write(`\nchaos: ${signal}, killing every child process\n`);
      killEverything();
      process.exit(130);
    });
  }
  process.on('uncaughtException', (error) => {
    process.stderr.write(
      `chaos: uncaught ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    killEverything();
    process.exit(2);
  });
}
