import { HcpApiError } from '@hcp/client';

/**
 * What `hcp` exits with, so scripts can branch on the outcome without parsing text. Documented in
 * `hcp --help` and packages/cli/README.md; never renumber one.
 */
export const EXIT = {
  /** Done: the request was answered, and with --wait the job succeeded. */
  OK: 0,
  /** The CLI itself failed (a bug, or a local file it could not write). */
  INTERNAL: 1,
  /** Usage: an unknown command or option, a bad value, no HCP or project configured. */
  USAGE: 2,
  /** HCP refused the request (4xx: invalid, unauthorized, forbidden, not found, conflict, quota). */
  REFUSED: 3,
  /** The job ran and failed (--wait, jobs watch). */
  JOB_FAILED: 4,
  /** Gave up waiting: the job was still unfinished at --timeout (it goes on in HCP). */
  TIMED_OUT: 5,
  /** HCP could not be reached, or answered 5xx or 429 (try again later, with the same Idempotency-Key). */
  UNAVAILABLE: 6,
  /** Interrupted (Ctrl-C) while waiting; the job goes on in HCP. */
  INTERRUPTED: 130,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

export const EXIT_CODES_HELP = `
Exit codes:
  0  done (with --wait: the job succeeded)
  2  usage error (unknown command or option, bad value, nothing configured)
  3  refused by HCP (4xx: invalid request, unauthorized, forbidden, not found, conflict, quota)
  4  the job failed
  5  timed out waiting for the job (--timeout); the job goes on in HCP
  6  HCP unreachable, or answered 5xx or 429; retrying with the same --idempotency-key is safe
  1  the CLI itself failed
`;

/** A mistake in how the CLI was called or configured: exit 2 with this message. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** A job that finished failed, or a wait that gave up: the message was shown, the code says which. */
export class OutcomeError extends Error {
  override readonly name = 'OutcomeError';
  constructor(
    readonly exitCode: ExitCode,
    message: string,
  ) {
    super(message);
  }
}

/** The exit code an error stands for. */
export function exitCodeOf(err: unknown): ExitCode {
  if (err instanceof UsageError) return EXIT.USAGE;
  if (err instanceof OutcomeError) return err.exitCode;
  if (err instanceof HcpApiError) {
    if (err.code === 'TIMEOUT') return EXIT.TIMED_OUT;
    if (err.status === 0 || err.status >= 500 || err.status === 429) return EXIT.UNAVAILABLE;
    if (err.status >= 400) return EXIT.REFUSED;
    return EXIT.UNAVAILABLE;
  }
  return EXIT.INTERNAL;
}

/** One line for people: what went wrong, with HCP's code and trace id when there is one. */
export function describeError(err: unknown): string {
  if (err instanceof HcpApiError) {
    if (err.status === 0 && err.code === 'UNREACHABLE') return `HCP unreachable: ${err.message}`;
    const trace = err.requestId ? ` (trace ${err.requestId})` : '';
    const details = err.details && typeof err.details === 'object' ? ` ${JSON.stringify(err.details)}` : '';
    return `${err.code}: ${err.message}${details}${trace}`;
  }
  return err instanceof Error ? err.message : String(err);
}
