import { UsageError } from '../exit-codes';
import { HcpConfigFile } from './config-file';

/** Where and as whom a command talks to HCP. */
export interface Connection {
  url: string;
  token: string;
  /** The project tenant commands use without --project; undefined when none is set anywhere. */
  project?: string;
  /** The context it came from, if any. */
  context?: string;
}

export interface ConnectionFlags {
  context?: string;
  project?: string;
}

/**
 * Flags win over the environment (HCP_CONTEXT, HCP_URL, HCP_TOKEN, HCP_PROJECT), which wins over the
 * config file's context, so a script can run with no config file at all.
 */
export function resolveConnection(config: HcpConfigFile, flags: ConnectionFlags, env: NodeJS.ProcessEnv): Connection {
  const contextName = flags.context ?? (env.HCP_CONTEXT?.trim() || config.current_context);
  const context = contextName ? config.contexts[contextName] : undefined;
  if (contextName && !context && (flags.context || env.HCP_CONTEXT?.trim()))
    throw new UsageError(`no context named "${contextName}" (hcp context list)`);
  const url = env.HCP_URL?.trim() || context?.url;
  const token = env.HCP_TOKEN?.trim() || context?.token;
  if (!url || !token)
    throw new UsageError(
      'not logged in: run `hcp login --url <HCP address> --token <token>` (or set HCP_URL and HCP_TOKEN)',
    );
  const project = flags.project ?? (env.HCP_PROJECT?.trim() || context?.project);
  return { url, token, project, context: context ? contextName : undefined };
}

/** The project a tenant command works in: --project, HCP_PROJECT or the context's. */
export function requireProject(connection: Connection): string {
  if (connection.project) return connection.project;
  throw new UsageError('no project: pass --project <id>, or set one with `hcp context set-project <id>`');
}
