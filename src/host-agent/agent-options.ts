import { parseArgs } from 'node:util';

/** How the agent is told what to do: flags first, then HCP_AGENT_* variables, then defaults. */
export interface AgentOptions {
  /** HCP's base URL (or its internal port's); may come from the credential file after enrollment. */
  hcp?: string;
  token?: string;
  stateDir: string;
  identity?: string;
  libvirtUri: string;
  pool: string;
  network?: string;
  vncListen?: string;
  consoleHost?: string;
  caFile?: string;
  concurrency: number;
  heartbeatIntervalMs: number;
  claimWaitMs: number;
  shutdownGraceMs: number;
  /** Enroll (when not enrolled yet), write the credential and exit: what the install script runs. */
  enrollOnly: boolean;
  /** Put a rotated credential (from HCP_AGENT_CREDENTIAL or stdin) into the credential file and exit. */
  replaceCredential: boolean;
  help: boolean;
}

/** The arguments or variables are wrong: the agent says which and exits with EXIT_CODES.badArguments. */
export class AgentArgumentError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AgentArgumentError';
  }
}

export const AGENT_USAGE = `usage: npm run agent -- --hcp <url> [--token <bootstrap token>] [options]
  --hcp <url>                     HCP's base URL (or its internal port's)           HCP_AGENT_HCP
  --token <token>                 bootstrap token, used once to enroll               HCP_AGENT_TOKEN
  --state-dir <dir>               where the credential is kept (/var/lib/hcp-agent)  HCP_AGENT_STATE_DIR
  --identity <id>                 this host's identity (/etc/machine-id, hostname)   HCP_AGENT_IDENTITY
  --libvirt-uri <uri>             libvirt connection (qemu:///system)                HCP_AGENT_LIBVIRT_URI
  --pool <name>                   libvirt storage pool for disks (hcp)               HCP_AGENT_POOL
  --network <name>                libvirt network guests join                        HCP_AGENT_NETWORK
  --vnc-listen <address>          address QEMU's VNC servers listen on               HCP_AGENT_VNC_LISTEN
  --console-host <address>        address HCP reaches this host's VNC servers on     HCP_AGENT_CONSOLE_HOST
  --ca-file <pem>                 CA certificate(s) HCP's TLS certificate chains to  HCP_AGENT_CA_FILE
  --concurrency <n>               calls run at once, 1..32 (4)                       HCP_AGENT_CONCURRENCY
  --heartbeat-interval-ms <ms>    between heartbeats (10000)                         HCP_AGENT_HEARTBEAT_INTERVAL_MS
  --claim-wait-ms <ms>            long-poll wait of a claim, 0..30000 (20000)        HCP_AGENT_CLAIM_WAIT_MS
  --shutdown-grace-ms <ms>        running calls may finish on SIGTERM (20000)        HCP_AGENT_SHUTDOWN_GRACE_MS
  --enroll-only                   enroll, write the credential file and exit
  --replace-credential            store a rotated credential (HCP_AGENT_CREDENTIAL or stdin) and exit
  --help`;

const STRING_OPTIONS = [
  'hcp',
  'token',
  'state-dir',
  'identity',
  'libvirt-uri',
  'pool',
  'network',
  'vnc-listen',
  'console-host',
  'ca-file',
  'concurrency',
  'heartbeat-interval-ms',
  'claim-wait-ms',
  'shutdown-grace-ms',
] as const;

type StringOption = (typeof STRING_OPTIONS)[number];

const envNameOf = (option: string) => `HCP_AGENT_${option.replace(/-/g, '_').toUpperCase()}`;

export function parseAgentOptions(argv: string[], env: NodeJS.ProcessEnv = process.env): AgentOptions {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        ...Object.fromEntries(STRING_OPTIONS.map((name) => [name, { type: 'string' as const }])),
        'enroll-only': { type: 'boolean' },
        'replace-credential': { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (err) {
    throw new AgentArgumentError((err as Error).message);
  }
  const get = (name: StringOption): string | undefined => {
    const flag = values[name];
    const raw = typeof flag === 'string' ? flag : env[envNameOf(name)];
    const trimmed = raw?.trim();
    return trimmed ? trimmed : undefined;
  };
  const int = (name: StringOption, fallback: number, min: number, max: number): number => {
    const raw = get(name);
    if (raw === undefined) return fallback;
    const n = Number(raw);
    if (!/^\d+$/.test(raw) || !Number.isSafeInteger(n) || n < min || n > max) {
      throw new AgentArgumentError(
        `--${name} (${envNameOf(name)}) must be a whole number from ${min} to ${max}, not "${raw}"`,
      );
    }
    return n;
  };
  const hcp = get('hcp');
  if (hcp !== undefined) checkUrl(hcp);
  return {
    hcp,
    token: get('token'),
    stateDir: get('state-dir') ?? '/var/lib/hcp-agent',
    identity: get('identity'),
    libvirtUri: get('libvirt-uri') ?? 'qemu:///system',
    pool: get('pool') ?? 'hcp',
    network: get('network'),
    vncListen: get('vnc-listen'),
    consoleHost: get('console-host'),
    caFile: get('ca-file'),
    concurrency: int('concurrency', 4, 1, 32),
    heartbeatIntervalMs: int('heartbeat-interval-ms', 10_000, 100, 600_000),
    claimWaitMs: int('claim-wait-ms', 20_000, 0, 30_000),
    shutdownGraceMs: int('shutdown-grace-ms', 20_000, 0, 600_000),
    enrollOnly: values['enroll-only'] === true,
    replaceCredential: values['replace-credential'] === true,
    help: values.help === true,
  };
}

function checkUrl(value: string): void {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new AgentArgumentError(`--hcp must be a URL such as https://hcp.example:8443, not "${value}"`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new AgentArgumentError(`--hcp must be an http:// or https:// URL, not "${value}"`);
  }
}
