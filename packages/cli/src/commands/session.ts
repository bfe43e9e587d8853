import { createHcpClient, HcpApiError } from '@hcp/client';
import { Command } from 'commander';
import { HcpContext, loadConfig, saveConfig } from '../config/config-file';
import { UsageError } from '../exit-codes';
import { renderList } from '../output/output';
import { CLI_VERSION, CliRuntime } from '../runtime';

/** `hcp login` and `hcp context ...`: where the CLI keeps HCPs and tokens. */
export function sessionCommands(program: Command, rt: CliRuntime): void {
  program
    .command('login')
    .description('save an HCP address and a token as a context (verified with a call first)')
    .requiredOption('--url <url>', 'HCP address, e.g. http://localhost:8080')
    .option('--token <token>', 'bearer token; "-" reads it from standard input (default: $HCP_TOKEN)')
    .option('--name <context>', 'name of the context to save (default: --context, else "default")')
    .action(async (opts: { url: string; token?: string; name?: string }, cmd: Command) => {
      const globals = rt.globals(cmd);
      const name = opts.name ?? globals.context ?? 'default';
      const url = validUrl(opts.url);
      const token = (opts.token === '-' ? await rt.readStdin() : (opts.token ?? rt.io.env.HCP_TOKEN ?? '')).trim();
      if (!token) throw new UsageError('no token: pass --token <token>, --token - (standard input) or set HCP_TOKEN');
      await verifyToken(url, token);
      const claims = tokenClaims(token);
      const projects = Object.keys(claims.projects);
      const project = globals.project ?? (projects.length === 1 ? projects[0] : undefined);
      const file = rt.configFile;
      const config = loadConfig(file);
      const context: HcpContext = { url, token, ...(project ? { project } : {}) };
      config.contexts[name] = context;
      config.current_context = name;
      saveConfig(file, config);
      const who = claims.sub ? ` as ${claims.sub}` : '';
      const roles = [
        ...Object.entries(claims.projects).map(([p, r]) => `${p}:${r}`),
        ...claims.opsRoles.map((r) => `ops:${r}`),
      ];
      rt.out(
        `logged in to ${url}${who}${roles.length ? ` (${roles.join(', ')})` : ''}; context "${name}" saved in ${file}` +
          `${project ? `, project ${project}` : ''}\n`,
      );
    });

  const context = program.command('context').description('the HCPs this CLI knows (contexts in the config file)');
  context
    .command('list')
    .description('list contexts; * marks the current one')
    .action((_opts, cmd: Command) => {
      const config = loadConfig(rt.configFile);
      if (Object.keys(config.contexts).length === 0)
        rt.err(`no contexts in ${rt.configFile} yet: hcp login --url <HCP address> --token <token>`);
      const rows = Object.entries(config.contexts).map(([name, c]) => ({
        current: name === config.current_context,
        name,
        url: c.url,
        project: c.project ?? null,
      }));
      rt.out(
        renderList(rows, rt.format(cmd), [
          ['CURRENT', (r) => (r.current ? '*' : ' ')],
          ['NAME', (r) => r.name],
          ['URL', (r) => r.url],
          ['PROJECT', (r) => r.project],
        ]),
      );
    });
  context
    .command('use <name>')
    .description('make a context the current one')
    .action((name: string) => {
      const file = rt.configFile;
      const config = loadConfig(file);
      if (!config.contexts[name]) throw new UsageError(`no context named "${name}" (hcp context list)`);
      config.current_context = name;
      saveConfig(file, config);
      rt.out(`current context: ${name}\n`);
    });
  context
    .command('delete <name>')
    .description('forget a context and its token')
    .action((name: string) => {
      const file = rt.configFile;
      const config = loadConfig(file);
      if (!config.contexts[name]) throw new UsageError(`no context named "${name}" (hcp context list)`);
      delete config.contexts[name];
      if (config.current_context === name) config.current_context = undefined;
      saveConfig(file, config);
      rt.out(`deleted context ${name}\n`);
    });
  context
    .command('set-project <project>')
    .description('the project commands of the current context (or --context) use without --project')
    .action((project: string, _opts, cmd: Command) => {
      const file = rt.configFile;
      const config = loadConfig(file);
      const name = rt.globals(cmd).context ?? config.current_context;
      const target = name ? config.contexts[name] : undefined;
      if (!name || !target) throw new UsageError('no context: run `hcp login` first');
      target.project = project;
      saveConfig(file, config);
      rt.out(`context ${name}: project ${project}\n`);
    });
}

function validUrl(text: string): string {
  try {
    const url = new URL(text);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('not http(s)');
    return text.replace(/\/+$/, '');
  } catch {
    throw new UsageError(`--url must be an http(s) address, not "${text}"`);
  }
}

/**
 * Asks HCP whether it takes the token: any answer but 401 means it does (a 403 is a valid token
 * without a tenant role, an ops token for instance). 401 throws (exit 3), no answer too (exit 6).
 */
async function verifyToken(url: string, token: string): Promise<void> {
  const client = createHcpClient({ baseUrl: url, token, userAgent: `hcp-cli/${CLI_VERSION}` });
  const { response, error } = await client.GET('/v1/zones', {});
  if (response.status === 401) throw HcpApiError.fromResponse(response, error);
  if (response.status >= 500) throw HcpApiError.fromResponse(response, error);
}

/** What the token says about its holder, for the login line; unreadable claims read as none. */
function tokenClaims(token: string): { sub?: string; projects: Record<string, string>; opsRoles: string[] } {
  try {
    const payload = JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8'));
    const projects =
      payload.hcp_projects && typeof payload.hcp_projects === 'object' && !Array.isArray(payload.hcp_projects)
        ? Object.fromEntries(Object.entries(payload.hcp_projects).filter(([, r]) => typeof r === 'string'))
        : {};
    const opsRoles = Array.isArray(payload.hcp_ops_roles)
      ? payload.hcp_ops_roles.filter((r: unknown) => typeof r === 'string')
      : [];
    return {
      sub: typeof payload.sub === 'string' ? payload.sub : undefined,
      projects: projects as Record<string, string>,
      opsRoles,
    };
  } catch {
    return { projects: {}, opsRoles: [] };
  }
}
