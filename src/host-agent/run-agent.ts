import { readFileSync } from 'node:fs';
import { AGENT_USAGE, AgentArgumentError, type AgentOptions, parseAgentOptions } from './agent-options';
import { type AgentLog, describeError } from './agent-log';
import { agentVersion } from './agent-version';
import { HOST_CREDENTIAL_PREFIX } from '@hcp/host-protocol';
import { CredentialFileError, credentialPathOf, replaceCredential } from './credential-file';
import { EnrollmentError, ensureEnrolled } from './enrollment';
import { EXIT_CODES } from './exit-codes';
import { HcpClient } from './hcp-client';
import { HostAgent } from './host-agent';
import type { HostDriver } from './host-driver';

export interface RunAgentDeps {
  log: AgentLog;
  /** The local driver, built once the host is enrolled (its cluster id comes from enrollment). */
  driverFor(options: AgentOptions, clusterId: string): HostDriver;
  /** Fired to stop the agent gracefully (SIGTERM/SIGINT in main.ts). */
  stop: AbortSignal;
  writeOut?: (text: string) => void;
  /** Standard input, read whole (where --replace-credential takes the new credential from). */
  readStdin?: () => Promise<string>;
  machineIdFile?: string;
}

/** The agent from its command line to its exit code: enroll or load the credential, then work until told to stop. */
export async function runAgent(argv: string[], env: NodeJS.ProcessEnv, deps: RunAgentDeps): Promise<number> {
  const { log } = deps;
  let options: AgentOptions;
  try {
    options = parseAgentOptions(argv, env);
  } catch (err) {
    if (!(err instanceof AgentArgumentError)) throw err;
    log.error(`${err.message}\n${AGENT_USAGE}`);
    return EXIT_CODES.badArguments;
  }
  if (options.help) {
    (deps.writeOut ?? ((text) => process.stdout.write(text)))(`${AGENT_USAGE}\n`);
    return EXIT_CODES.ok;
  }
  let ca: Buffer | undefined;
  if (options.caFile) {
    try {
      ca = readFileSync(options.caFile);
    } catch (err) {
      log.error(`cannot read --ca-file ${options.caFile}: ${describeError(err)}`);
      return EXIT_CODES.badArguments;
    }
  }
  if (options.replaceCredential) return replaceStoredCredential(options, env, deps);
  const version = agentVersion();
  const clientFor = (url: string, credential?: string) =>
    new HcpClient({ baseUrl: url, ...(ca ? { ca } : {}), ...(credential ? { credential } : {}) });

  let enrolled: Awaited<ReturnType<typeof ensureEnrolled>>;
  try {
    enrolled = await ensureEnrolled({
      hcp: options.hcp,
      token: options.token,
      stateDir: options.stateDir,
      identity: options.identity,
      agentVersion: version,
      clientFor,
      log,
      machineIdFile: deps.machineIdFile,
    });
  } catch (err) {
    if (err instanceof AgentArgumentError) {
      log.error(err.message);
      return EXIT_CODES.badArguments;
    }
    if (err instanceof EnrollmentError) {
      log.error(err.message);
      return EXIT_CODES.cannotEnroll;
    }
    if (err instanceof CredentialFileError) {
      log.error(`refusing to start: ${err.message}`);
      return EXIT_CODES.credentialFile;
    }
    log.error(`cannot enroll: ${describeError(err)}`);
    return EXIT_CODES.cannotEnroll;
  }
  if (options.enrollOnly) return EXIT_CODES.ok;

  const driver = deps.driverFor(options, enrolled.cluster_id);
  const agent = new HostAgent({
    hostId: enrolled.host_id,
    client: clientFor(enrolled.hcp, enrolled.credential),
    driver,
    log,
    concurrency: options.concurrency,
    heartbeatIntervalMs: options.heartbeatIntervalMs,
    claimWaitMs: options.claimWaitMs,
    agentVersion: version,
    consoleHost: options.consoleHost,
  });
  agent.start();
  const stop = () => {
    log.info(`stopping: no new calls; running calls get up to ${options.shutdownGraceMs} ms to finish`);
    void agent.stop(options.shutdownGraceMs);
  };
  if (deps.stop.aborted) stop();
  else deps.stop.addEventListener('abort', stop, { once: true });

  const end = await agent.ended;
  deps.stop.removeEventListener('abort', stop);
  try {
    await driver.close?.();
  } catch (err) {
    log.warn(`closing the driver failed: ${describeError(err)}`);
  }
  if (end.reason === 'credential_rejected') {
    const file = credentialPathOf(options.stateDir);
    log.error(
      `the credential in ${file} is no longer valid; to enroll this host again, remove ${file} and run the agent with a new bootstrap token`,
    );
    return EXIT_CODES.credentialRejected;
  }
  log.info(
    end.unfinished > 0
      ? `stopped; ${end.unfinished} call(s) still running are left to their leases (HCP hands them out again)`
      : 'stopped',
  );
  return EXIT_CODES.ok;
}

async function replaceStoredCredential(
  options: AgentOptions,
  env: NodeJS.ProcessEnv,
  deps: RunAgentDeps,
): Promise<number> {
  const { log } = deps;
  const given = env.HCP_AGENT_CREDENTIAL?.trim() || (await (deps.readStdin ?? readAllStdin)()).trim();
  if (!given.startsWith(HOST_CREDENTIAL_PREFIX) || /\s/.test(given)) {
    log.error(
      `--replace-credential needs the new host credential (${HOST_CREDENTIAL_PREFIX}…) in HCP_AGENT_CREDENTIAL or on stdin`,
    );
    return EXIT_CODES.badArguments;
  }
  try {
    const stored = await replaceCredential(options.stateDir, given);
    log.info(
      `the credential of host ${stored.host_id} in ${credentialPathOf(options.stateDir)} is replaced; restart the agent to use it`,
    );
    return EXIT_CODES.ok;
  } catch (err) {
    if (!(err instanceof CredentialFileError)) throw err;
    log.error(`cannot replace the credential: ${err.message}`);
    return EXIT_CODES.credentialFile;
  }
}

async function readAllStdin(): Promise<string> {
  if (process.stdin.isTTY) return '';
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
