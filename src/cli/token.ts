/**
 * Prints a dev-mode token signed with the key in HCP_DATA_DIR:
 *   npm run token -- --sub alice --project demo:admin [--project other:viewer] [--ops cloud-operator] [--ttl 3600]
 */
import { parseArgs } from 'node:util';
import { loadOrCreateDevSigningKey, OPS_ROLES, OpsRole, signDevToken, TENANT_ROLES, TenantRole } from '@hcp/auth';
import { loadConfig } from '../config/hcp-config';

function fail(message: string): never {
  process.stderr.write(
    `${message}\nusage: npm run token -- --sub <actor> [--project <id>:<${TENANT_ROLES.join('|')}>]... [--ops <${OPS_ROLES.join('|')}>]... [--ttl <seconds>]\n`,
  );
  process.exit(2);
}

function main(): void {
  const { values } = parseArgs({
    options: {
      sub: { type: 'string' },
      project: { type: 'string', multiple: true, default: [] },
      ops: { type: 'string', multiple: true, default: [] },
      ttl: { type: 'string', default: '3600' },
    },
    strict: true,
  });
  const config = loadConfig();
  if (config.auth.mode !== 'dev') fail('tokens can only be printed in dev mode (HCP_AUTH_MODE=dev)');
  if (!values.sub) fail('--sub is required');
  const projects: Record<string, TenantRole> = {};
  for (const binding of values.project ?? []) {
    const at = binding.lastIndexOf(':');
    const role = binding.slice(at + 1) as TenantRole;
    if (at <= 0 || !TENANT_ROLES.includes(role)) fail(`--project ${binding}: expected <project>:<role>`);
    projects[binding.slice(0, at)] = role;
  }
  const ops = (values.ops ?? []) as OpsRole[];
  for (const role of ops) if (!OPS_ROLES.includes(role)) fail(`--ops ${role}: unknown ops role`);
  const ttl = Number(values.ttl);
  if (!Number.isInteger(ttl) || ttl <= 0 || ttl > 30 * 86400) fail('--ttl must be a number of seconds up to 30 days');
  const key = loadOrCreateDevSigningKey(config.dataDir);
  process.stdout.write(
    `${signDevToken(key, { sub: values.sub, projects, opsRoles: ops, issuer: config.auth.issuer, audience: config.auth.audience, ttlSeconds: ttl })}\n`,
  );
}

main();
