/** Why an RFB handshake failed. Messages never carry passwords, tickets or challenge bytes. */
export type RfbFailureReason = 'auth_failed' | 'protocol' | 'timeout' | 'closed' | 'unsupported_security';

export class RfbHandshakeError extends Error {
  constructor(
    readonly reason: RfbFailureReason,
    message: string,
  ) {
    super(message);
    this.name = 'RfbHandshakeError';
  }
}
