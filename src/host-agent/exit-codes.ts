/** The agent's exit codes: each says what an operator (or systemd) should do next. */
export const EXIT_CODES = {
  /** Stopped on SIGTERM/SIGINT, or --enroll-only done. */
  ok: 0,
  /** Something unexpected; a restart may help. */
  unexpected: 1,
  /** Wrong flags or HCP_AGENT_* variables: fix the command line. */
  badArguments: 2,
  /** Enrollment failed (HCP unreachable, TLS, token refused or used, wrong URL): the message says which. */
  cannotEnroll: 3,
  /** HCP refused the stored credential (revoked or rotated away): enroll again with a new token. */
  credentialRejected: 4,
  /** The credential file cannot be used (readable by others, corrupt, unreadable): the message says why. */
  credentialFile: 5,
} as const;
