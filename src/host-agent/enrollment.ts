import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import { INTERNAL_ROUTES } from '@hcp/host-protocol';
import { AgentArgumentError } from './agent-options';
import type { AgentLog } from './agent-log';
import { credentialPathOf, readCredential, type StoredCredential, writeCredential } from './credential-file';
import { type HcpClient, HcpStatusError, HcpUnreachableError } from './hcp-client';

/** Enrollment failed; the message is one line saying why and what to do. */
export class EnrollmentError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'EnrollmentError';
  }
}

export interface EnrollmentInput {
  hcp?: string;
  token?: string;
  stateDir: string;
  identity?: string;
  agentVersion: string;
  /** Builds the client that talks to HCP at `url` (TLS options are the caller's). */
  clientFor(url: string): HcpClient;
  log: AgentLog;
  machineIdFile?: string;
}

/**
 * The host's credential: the one in the state dir when this host enrolled before (a bootstrap token is
 * single-use, so a restart must not present it again), else a new one from enrolling with the token.
 */
export async function ensureEnrolled(input: EnrollmentInput): Promise<StoredCredential> {
  const file = credentialPathOf(input.stateDir);
  const stored = await readCredential(input.stateDir);
  if (stored) {
    if (input.token) {
      input.log.info(
        `host ${stored.host_id} is already enrolled (${file}); the bootstrap token was not needed and was not used`,
      );
    }
    if (input.hcp && input.hcp !== stored.hcp) {
      input.log.warn(`using --hcp ${input.hcp}; the credential in ${file} was issued by ${stored.hcp}`);
    }
    return { ...stored, hcp: input.hcp ?? stored.hcp };
  }
  if (!input.token) {
    throw new AgentArgumentError(
      `this host is not enrolled yet (no ${file}) and no bootstrap token was given: pass --token (or HCP_AGENT_TOKEN)`,
    );
  }
  if (!input.hcp) throw new AgentArgumentError('this host is not enrolled yet: pass --hcp <url> (or HCP_AGENT_HCP)');
  const identity = input.identity ?? (await machineIdentity(input.machineIdFile));
  const client = input.clientFor(input.hcp);
  let answer: unknown;
  try {
    answer = await client.enroll({
      token: input.token,
      identity,
      hostname: os.hostname() || identity,
      agent_version: input.agentVersion,
    });
  } catch (err) {
    throw new EnrollmentError(describeEnrollFailure(err, input.hcp));
  } finally {
    client.close();
  }
  const { host_id, cluster_id, credential } = (answer ?? {}) as Record<string, unknown>;
  if (typeof host_id !== 'string' || typeof cluster_id !== 'string' || typeof credential !== 'string') {
    throw new EnrollmentError(
      `cannot enroll: ${input.hcp}${INTERNAL_ROUTES.enroll} answered without host_id, cluster_id and credential; is --hcp an HCP of this version?`,
    );
  }
  const enrolled: StoredCredential = { host_id, cluster_id, credential, hcp: input.hcp };
  await writeCredential(input.stateDir, enrolled);
  input.log.info(`enrolled as host ${host_id} in cluster ${cluster_id} (identity ${identity}); credential in ${file}`);
  return enrolled;
}

/** One line per reason an enrollment fails, each with what to do about it. */
export function describeEnrollFailure(err: unknown, hcp: string): string {
  if (err instanceof HcpUnreachableError) {
    if (err.isTls) {
      return `cannot enroll: TLS with ${hcp} failed (${err.code}: ${err.reason}); if HCP's certificate is signed by a private CA, pass --ca-file <pem>`;
    }
    return `cannot enroll: HCP at ${hcp} is unreachable (${err.code ?? 'error'}: ${err.reason}); check --hcp and that this host reaches HCP's internal port`;
  }
  if (err instanceof HcpStatusError) {
    const said = err.hcpMessage ? `: ${err.hcpMessage}` : '';
    switch (err.status) {
      case 401:
        return `cannot enroll: HCP refused the bootstrap token (401${said}); it is invalid, expired or already used: ask ops for a new one`;
      case 409:
        return `cannot enroll: the bootstrap token already enrolled another host (409${said}); each host needs its own token, and a retried enrollment must present the same --identity`;
      case 404:
        return `cannot enroll: ${err.url} is not HCP's internal router (404); check --hcp (HCP's base URL, or its internal port when HCP serves the internal router apart)`;
      case 429:
        return `cannot enroll: HCP is rate limiting enrollments (429${said}); try again in a minute`;
      default:
        return `cannot enroll: HCP answered ${err.status}${err.code ? ` ${err.code}` : ''}${said}`;
    }
  }
  return `cannot enroll: ${err instanceof Error ? err.message : String(err)}`;
}

/** The host's stable identity: the machine id systemd hosts carry, else the hostname. */
export async function machineIdentity(machineIdFile = '/etc/machine-id'): Promise<string> {
  try {
    const id = (await fs.readFile(machineIdFile, 'utf8')).trim();
    if (id) return id;
  } catch {
    // No machine id (containers, minimal images): the hostname is the next stable thing.
  }
  return os.hostname();
}
