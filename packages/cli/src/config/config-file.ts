import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import * as path from 'node:path';
import { parse, stringify } from 'yaml';
import { z } from 'zod';
import { UsageError } from '../exit-codes';

const contextSchema = z
  .object({
    url: z.string().url(),
    token: z.string().min(1),
    /** The project commands use when --project is not given. */
    project: z.string().min(1).optional(),
  })
  .strict();

const configSchema = z
  .object({
    current_context: z.string().min(1).optional(),
    contexts: z.record(z.string().min(1), contextSchema).default({}),
  })
  .strict();

export type HcpContext = z.infer<typeof contextSchema>;
export type HcpConfigFile = z.infer<typeof configSchema>;

/** $HCP_CONFIG, else ~/.config/hcp/config.yaml ($XDG_CONFIG_HOME when set). */
export function configPath(env: NodeJS.ProcessEnv): string {
  if (env.HCP_CONFIG?.trim()) return path.resolve(env.HCP_CONFIG.trim());
  const base = env.XDG_CONFIG_HOME?.trim() || path.join(env.HOME?.trim() || homedir(), '.config');
  return path.join(base, 'hcp', 'config.yaml');
}

/** The config file, or an empty one when it does not exist yet. A file that is not one is a usage error. */
export function loadConfig(file: string): HcpConfigFile {
  if (!existsSync(file)) return { contexts: {} };
  let raw: unknown;
  try {
    raw = parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new UsageError(`${file} is not YAML: ${(err as Error).message}`);
  }
  const parsed = configSchema.safeParse(raw ?? {});
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new UsageError(`${file}: ${issue.path.join('.') || '(top)'}: ${issue.message}`);
  }
  return parsed.data;
}

/**
 * Writes the config readable by its owner only (0600, its folder 0700): it holds bearer tokens. The
 * file is written beside itself and renamed, so a crash never leaves half a config; a file that others
 * could read before is tightened.
 */
export function saveConfig(file: string, config: HcpConfigFile): void {
  const dir = path.dirname(file);
  if (!existsSync(dir)) mkdirSync(dir, { recursive: true, mode: 0o700 });
  const tmp = path.join(dir, `.${path.basename(file)}.${process.pid}.tmp`);
  writeFileSync(tmp, stringify(configSchema.parse(config)), { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, file);
}

/** Whether others than the owner may read the file (then a token in it may have leaked). */
export function readableByOthers(file: string): boolean {
  return existsSync(file) && (statSync(file).mode & 0o077) !== 0;
}
