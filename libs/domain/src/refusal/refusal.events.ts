import { DomainEvent } from '../events/domain-event';

/**
 * Refusals HCP counted but did not record one by one. A flood of refused requests (bad tokens, forbidden
 * routes) would otherwise cost one stored event each: past a per-window budget per client address or
 * actor, HCP only counts them, and one summary per address (or actor) and window says how many there
 * were, so the audit trail stays complete in number while its size stays bounded.
 */
export type RequestRefusalsSuppressed = DomainEvent<
  'RequestRefusalsSuppressed',
  {
    /** The client address the refusals came from; null when the budget that ran out was the actor's. */
    client_address: string | null;
    /** The verified actor they came from; null for anonymous callers or an address budget. */
    actor: string | null;
    /** When the first refusal of this summary was counted, and when the summary was written. */
    window_start: string;
    window_end: string;
    /** Refusals not recorded one by one, including `rate_limited`. */
    suppressed: number;
    /** Of those, anonymous refusals answered 429 RATE_LIMITED (past the higher budget). */
    rate_limited: number;
    /** How many of each taxonomy code (UNAUTHORIZED, FORBIDDEN, ...) were suppressed. */
    codes: Record<string, number>;
  }
>;

export type RefusalEvent = RequestRefusalsSuppressed;

export const REFUSAL_EVENT_VERSIONS: Record<RefusalEvent['type'], number> = { RequestRefusalsSuppressed: 1 };
