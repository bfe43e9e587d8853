import { HcpError } from '@hcp/domain';

/** The agent's log: one line per event on stderr (journald keeps it under systemd). */
export interface AgentLog {
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

export function streamLog(write: (line: string) => void = (line) => process.stderr.write(line)): AgentLog {
  const at = (level: string, message: string) => write(`${new Date().toISOString()} ${level} hcp-agent: ${message}\n`);
  return {
    info: (message) => at('info', message),
    warn: (message) => at('warn', message),
    error: (message) => at('error', message),
  };
}

/** An error for the host's own log: a driver's details (virsh's words) belong there, not in what HCP gets. */
export function describeError(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const details = err instanceof HcpError && err.details ? ` ${JSON.stringify(err.details).slice(0, 1_000)}` : '';
  return `${err.message}${details}`;
}
