import { LRUCache } from 'lru-cache';
import { Principal } from './principal';

export interface VerifiedTokenCacheOptions {
  /** Bound on remembered tokens; the least recently used is forgotten first. */
  maxEntries: number;
  /**
   * Longest time a verification is trusted without redoing it. Bounds how long a token signed by a key
   * withdrawn from the JWKS stays accepted (jose's own JWKS cache already trusts a fetched set for longer).
   */
  maxAgeMs: number;
  now?: () => number;
}

interface Entry {
  principal: Principal;
  validUntil: number;
}

/**
 * Principals of tokens that passed verification, keyed by the exact token string: a client sends the
 * same token on every request, and an RS256 check per request costs more than the read it guards.
 * Only successes are stored (see TokenVerifier), and an entry never outlives its token's `exp`.
 */
export class VerifiedTokenCache {
  /** Least recently used first out (lru-cache: a Map evicting its first key walks every slot deleted before it). */
  private readonly entries: LRUCache<string, Entry>;
  private readonly now: () => number;

  constructor(private readonly options: VerifiedTokenCacheOptions) {
    this.now = options.now ?? Date.now;
    this.entries = new LRUCache({ max: Math.max(1, options.maxEntries) });
  }

  get(token: string): Principal | undefined {
    const entry = this.entries.get(token);
    if (!entry) return undefined;
    if (this.now() >= entry.validUntil) {
      this.entries.delete(token);
      return undefined;
    }
    return entry.principal;
  }

  /** `expSeconds` is the token's verified `exp` claim (seconds since the epoch). */
  set(token: string, principal: Principal, expSeconds: number): void {
    const now = this.now();
    // No clock-skew leeway here: past `exp` the token goes back to the verifier, which applies it.
    const validUntil = Math.min(expSeconds * 1000, now + this.options.maxAgeMs);
    if (!(validUntil > now) || this.options.maxEntries <= 0) return;
    this.entries.set(token, { principal: freeze(principal), validUntil });
  }

  get size(): number {
    return this.entries.size;
  }
}

/** One principal object now serves many requests: none of them may change it for the others. */
function freeze(principal: Principal): Principal {
  Object.freeze(principal.projects);
  Object.freeze(principal.opsRoles);
  return Object.freeze(principal);
}
