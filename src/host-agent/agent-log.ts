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

export const describeError = (err: unknown): string => (err instanceof Error ? err.message : String(err));
