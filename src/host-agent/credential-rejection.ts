import { HcpStatusError } from './hcp-client';

/** HCP no longer accepts this host's credential (revoked, or rotated away): no loop may go on with it. */
export const isCredentialRejected = (err: unknown): err is HcpStatusError =>
  err instanceof HcpStatusError && err.status === 401;

export type OnCredentialRejected = (err: HcpStatusError) => void;
