import { execFile } from 'node:child_process';
import { promises as fs } from 'node:fs';
import { promisify } from 'node:util';

/** Where the local PostgreSQL reports what it does; HCP passes its Nest logger, tests a recorder. */
export interface EmbeddedPostgresLogger {
  log(msg: string): void;
  warn(msg: string): void;
}

export const defaultLogger: EmbeddedPostgresLogger = {
  log: () => undefined,
  warn: (msg) => console.warn(msg),
};

/** How often state is polled while waiting for a server to become ready or to go away. */
export const POLL_MS = 50;

export const execFileAsync = promisify(execFile);

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export async function exists(file: string): Promise<boolean> {
  try {
    await fs.access(file);
    return true;
  } catch {
    return false;
  }
}

/** Text of `file`, or undefined when it does not exist. */
export async function readIfExists(file: string): Promise<string | undefined> {
  try {
    return await fs.readFile(file, 'utf8');
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return undefined;
    throw error;
  }
}

/** Written aside and renamed, so a crash never leaves a half-written file behind. */
export async function writeFileAtomically(file: string, text: string, mode: number): Promise<void> {
  const staging = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
  try {
    await fs.writeFile(staging, text, { mode });
    await fs.rename(staging, file);
  } catch (error) {
    await fs.rm(staging, { force: true }).catch(() => undefined);
    throw error;
  }
}

export function errorCode(error: unknown): string | undefined {
  return typeof error === 'object' && error !== null && 'code' in error
    ? String((error as { code: unknown }).code)
    : undefined;
}

export function errorText(error: unknown): string {
  if (typeof error === 'object' && error !== null && 'stderr' in error) {
    const stderr = String((error as { stderr: unknown }).stderr).trim();
    if (stderr) return stderr;
  }
  return error instanceof Error ? error.message : String(error);
}
