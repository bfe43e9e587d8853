/**
 * What went wrong, for callers that decide between retrying and stopping:
 * - CONFIG: a messaging variable is missing or malformed (stop at start-up).
 * - INVALID_MESSAGE: an envelope breaks the schema (a bug in the projection that built it; retrying
 *   the same event gives the same error).
 * - PUBLISH_FAILED / PUBLISH_TIMEOUT: the broker did not acknowledge (retry from the checkpoint).
 * - TOPIC_SETUP: topics could not be created or described.
 * Messages name topics, fields and variables, never secrets.
 */
export type MessagingErrorCode = 'CONFIG' | 'INVALID_MESSAGE' | 'PUBLISH_FAILED' | 'PUBLISH_TIMEOUT' | 'TOPIC_SETUP';

export class MessagingError extends Error {
  constructor(
    readonly code: MessagingErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'MessagingError';
  }

  /** True when trying the same messages again later can succeed (broker down, leader moving). */
  get retriable(): boolean {
    return this.code === 'PUBLISH_FAILED' || this.code === 'PUBLISH_TIMEOUT' || this.code === 'TOPIC_SETUP';
  }
}
