import { LRUCache } from 'lru-cache';
import { DomainEvent, EventContext, HcpError } from '@hcp/domain';
import {
  DomainEventCodec,
  EventStore,
  ExpectedRevision,
  NewEvent,
  RecordedEvent,
  SqlWrite,
  StreamAppend,
  StreamBusyError,
  WrongExpectedRevisionError,
} from '@hcp/eventstore';

/** Streams per readStreams of a loadMany: one PostgreSQL statement of a few hundred kB at most for VMs. */
const LOAD_MANY_PAGE = 500;

export interface Loaded<S> {
  id: string;
  state: S | null;
  /** Revision to expect when appending the next decision. */
  revision: ExpectedRevision;
}

/**
 * Loads an aggregate by folding its stream and appends decisions with optimistic concurrency. The
 * write side decides only from what it loads here, never from read models.
 */
export class AggregateRepository<S, E extends DomainEvent> {
  /**
   * Recently folded aggregates with the revision they reflect. Only a shortcut: a load still reads
   * every event after that revision from the store, so a stale entry costs a longer read, never a
   * wrong decision. States are immutable (evolve returns new objects), so sharing them is safe.
   * lru-cache, not a Map re-inserted on use: evicting a Map's first key walks the slots V8 keeps for
   * every key deleted before it, ~7 us per remember once full (1.4 s per 200,000; lru-cache 0.2 s).
   */
  private readonly folded: LRUCache<string, { state: S | null; revision: bigint }>;

  constructor(
    protected readonly store: EventStore,
    protected readonly codec: DomainEventCodec,
    protected readonly streamOf: (id: string) => string,
    private readonly evolve: (state: S | null, event: E, at: string) => S | null,
    cacheSize = 10_000,
  ) {
    this.folded = new LRUCache({ max: Math.max(1, cacheSize) });
  }

  async load(id: string): Promise<Loaded<S>> {
    const cached = this.folded.get(id);
    const recorded = await this.store.readStream(
      this.streamOf(id),
      cached ? { fromRevision: cached.revision + 1n } : {},
    );
    return this.folding(id, cached, recorded);
  }

  /**
   * Loads several aggregates as `load` would, one in the answer per id in the given order, reading their
   * streams a page at a time (one readStreams each; on PostgreSQL one statement per page). An event that
   * cannot be decoded rejects the whole call; aggregates of pages before it stay remembered.
   */
  async loadMany(ids: readonly string[]): Promise<Array<Loaded<S>>> {
    const distinct = [...new Set(ids)];
    const loaded = new Map<string, Loaded<S>>();
    for (let start = 0; start < distinct.length; start += LOAD_MANY_PAGE) {
      const page = distinct.slice(start, start + LOAD_MANY_PAGE);
      const cached = page.map((id) => this.folded.get(id));
      const streams = await this.store.readStreams(
        page.map((id, i) => ({
          streamId: this.streamOf(id),
          fromRevision: cached[i] ? cached[i].revision + 1n : undefined,
        })),
      );
      for (const [i, id] of page.entries())
        loaded.set(id, this.folding(id, cached[i], streams.get(this.streamOf(id)) ?? []));
    }
    return ids.map((id) => loaded.get(id)!);
  }

  /** The aggregate after `recorded`, the events of its stream after the cached fold (if any). */
  private folding(
    id: string,
    cached: { state: S | null; revision: bigint } | undefined,
    recorded: RecordedEvent[],
  ): Loaded<S> {
    const state = this.fold(
      cached ? cached.state : null,
      recorded.map((r) => this.codec.decode<E>(r)),
    );
    const last = recorded.length ? recorded[recorded.length - 1].revision : cached?.revision;
    if (last === undefined) return { id, state: null, revision: 'no_stream' };
    this.remember(id, state, last);
    return { id, state, revision: last };
  }

  /** Applies events in order, one `evolve` each. */
  private fold(state: S | null, events: ReadonlyArray<{ event: E; at: string }>): S | null {
    return events.reduce<S | null>((s, { event, at }) => this.evolve(s, event, at), state);
  }

  private remember(id: string, state: S | null, revision: bigint): void {
    this.folded.set(id, { state, revision });
  }

  /**
   * Appends a decision taken on `current` and returns the aggregate after it. A concurrent writer
   * that got there first surfaces as CONFLICT.
   */
  async append(current: Loaded<S>, events: E[], context: EventContext, ids?: string[]): Promise<Loaded<S>> {
    if (events.length === 0) return current;
    try {
      const { streamId, events: encoded, expected } = this.appendOf(current, events, context, ids);
      const result = await this.store.append(streamId, encoded, expected);
      const state = this.fold(
        current.state,
        events.map((event) => ({ event, at: context.occurred_at })),
      );
      this.remember(current.id, state, result.nextExpectedRevision);
      return { id: current.id, state, revision: result.nextExpectedRevision };
    } catch (err) {
      if (err instanceof WrongExpectedRevisionError)
        throw new HcpError('CONFLICT', 'the resource was changed concurrently; try again');
      throw err;
    }
  }

  /**
   * The append of a decision taken on `current`, for a caller that commits it with other writes (an
   * `alongside` of another aggregate's update): it expects the revision `current` was loaded at, so it
   * is refused if the stream moved since.
   */
  appendOf(current: Loaded<S>, events: E[], context: EventContext, ids?: string[]): StreamAppend {
    return {
      streamId: this.streamOf(current.id),
      events: events.map((e, i) => this.codec.encode(e, context, ids?.[i])),
      expected: current.revision,
    };
  }

  /**
   * Load, decide, append; on a concurrent change, load again and decide again so callers only see
   * CONFLICT when the decision itself is refused or contention persists. A refusal of the decision
   * (thrown by `decide`) is never retried. Hot streams pass a jittered, growing pause between rounds.
   */
  async update(
    id: string,
    decide: (state: S | null) => E[],
    context: EventContext,
    retry: RetryOptions = FEW_RETRIES,
    alongside?: Decision<S, E>['alongside'],
  ): Promise<{ state: S | null; events: E[]; alongside: boolean }> {
    const [outcome] = await this.updateMany(id, [{ decide, context, alongside }], retry);
    if (!outcome.ok) throw outcome.error;
    return { state: outcome.state, events: outcome.events, alongside: outcome.alongside };
  }

  /**
   * Several decisions on one aggregate with one load and one append (a group commit): each is decided
   * against the state the ones before it leave, a refusal (thrown by its `decide`) fails that one alone,
   * and a concurrent change makes the whole group load and decide again. One outcome per decision, in
   * order; a contention that persists past `retry.attempts` rejects them all with CONFLICT.
   */
  async updateMany(
    id: string,
    decisions: ReadonlyArray<Decision<S, E>>,
    retry: RetryOptions = FEW_RETRIES,
  ): Promise<Array<DecisionOutcome<S, E>>> {
    const streamId = this.streamOf(id);
    // Decisions whose writes alongside were refused (another stream not where they expected it): they
    // are decided again without them, and their callers write the rest on their own.
    const alone = new Set<number>();
    let decideOnRemembered = retry.fromRemembered === true;
    for (let attempt = 1; ; attempt++) {
      const remembered = decideOnRemembered ? this.folded.get(id) : undefined;
      decideOnRemembered = false;
      let round: GroupRound<S, E> | undefined;
      try {
        if (!remembered && retry.lockFirst && this.store.appendDecided) {
          // The stream stays locked from the read to the commit: writers in other processes queue here
          // instead of deciding on a state that is gone when they append.
          const cached = this.folded.get(id);
          const results = await this.store.appendDecided(streamId, cached ? cached.revision + 1n : 0n, (recorded) => {
            const current = this.folding(id, cached, recorded);
            round = this.decideGroup(current.state, decisions, alone);
            return round.recorded.length > 0 ? this.writesOf(streamId, current.revision, round) : null;
          });
          if (round!.recorded.length > 0) this.remember(id, round!.state, results[0]!.nextExpectedRevision);
          return round!.outcomes;
        }
        const current: Loaded<S> = remembered
          ? { id, state: remembered.state, revision: remembered.revision }
          : await this.load(id);
        round = this.decideGroup(current.state, decisions, alone);
        if (remembered && (round.recorded.length === 0 || round.outcomes.some((o) => !o.ok))) {
          // A refusal, or nothing to do, may be the remembered state's age alone: decided again on a fresh load.
          attempt -= 1;
          continue;
        }
        if (round.recorded.length === 0) return round.outcomes;
        const { appends, sqlWrites } = this.writesOf(streamId, current.revision, round);
        const [result] = await this.store.appendMany(appends, sqlWrites.length > 0 ? { sqlWrites } : {});
        this.remember(id, round.state, result!.nextExpectedRevision);
        return round.outcomes;
      } catch (err) {
        if (!(err instanceof WrongExpectedRevisionError) && !(err instanceof StreamBusyError)) throw err;
        const owner =
          err instanceof WrongExpectedRevisionError && err.streamId !== streamId
            ? round?.ownerOf.get(err.streamId)
            : undefined;
        if (owner !== undefined) {
          // Not a contention on this aggregate: decide again at once, that one without its writes.
          alone.add(owner);
          attempt -= 1;
          continue;
        }
        if (remembered) {
          // The stream moved since this process last read it: no contention yet, a normal round follows.
          attempt -= 1;
          continue;
        }
        if (attempt >= retry.attempts)
          throw new HcpError('CONFLICT', 'the resource was changed concurrently; try again');
      }
      if (retry.maxJitterMs > 0)
        await pause(Math.random() * Math.min(retry.maxJitterMs, retry.baseJitterMs * 2 ** (attempt - 1)));
    }
  }

  /** One round of a group commit: each decision against the state the ones before it leave. */
  private decideGroup(
    start: S | null,
    decisions: ReadonlyArray<Decision<S, E>>,
    alone: ReadonlySet<number>,
  ): GroupRound<S, E> {
    let state = start;
    const round: GroupRound<S, E> = {
      outcomes: [],
      state,
      recorded: [],
      others: [],
      sqlWrites: [],
      ownerOf: new Map(),
    };
    for (const [i, { decide, context, alongside }] of decisions.entries()) {
      try {
        const events = decide(state);
        state = this.fold(
          state,
          events.map((event) => ({ event, at: context.occurred_at })),
        );
        round.recorded.push(...events.map((e) => this.codec.encode(e, context)));
        const writes = events.length > 0 && !alone.has(i) ? alongside?.(events) : undefined;
        for (const append of writes?.appends ?? []) round.ownerOf.set(append.streamId, i);
        round.others.push(...(writes?.appends ?? []));
        round.sqlWrites.push(...(writes?.sqlWrites ?? []));
        round.outcomes.push({ ok: true, state, events, alongside: writes !== undefined });
      } catch (error) {
        round.outcomes.push({ ok: false, error });
      }
    }
    round.state = state;
    return round;
  }

  /** A round's writes: its events on the aggregate's stream, expecting `revision`, then the others'. */
  private writesOf(
    streamId: string,
    revision: ExpectedRevision,
    round: GroupRound<S, E>,
  ): { appends: StreamAppend[]; sqlWrites: SqlWrite[] } {
    return {
      appends: [{ streamId, events: round.recorded, expected: revision }, ...round.others],
      sqlWrites: round.sqlWrites,
    };
  }
}

/** What one round of a group commit decided, and what it writes. */
interface GroupRound<S, E> {
  outcomes: Array<DecisionOutcome<S, E>>;
  /** The aggregate after every decision of the round. */
  state: S | null;
  /** The round's events on the aggregate's stream. */
  recorded: NewEvent[];
  /** The decisions' writes alongside: other streams, and SQL writes. */
  others: StreamAppend[];
  sqlWrites: SqlWrite[];
  /** Which decision brought the append of each other stream. */
  ownerOf: Map<string, number>;
}

/** One decision of a group: how to decide, and who asked (each event keeps its own actor and trace). */
export interface Decision<S, E> {
  decide: (state: S | null) => E[];
  context: EventContext;
  /**
   * Writes to commit with this decision's events, in the same appendMany (one transaction on a store
   * that has them): asked once per round with the events decided, when there are any. They are dropped
   * (the outcome says so) when one of their streams is not where they expected it.
   */
  alongside?: (events: E[]) => AlongsideWrites | undefined;
}

/** Other streams (and, on a store that commits them, SQL writes) that commit with a decision. */
export interface AlongsideWrites {
  appends: StreamAppend[];
  sqlWrites?: SqlWrite[];
}

export type DecisionOutcome<S, E> =
  | {
      ok: true;
      state: S | null;
      events: E[];
      /** Its alongside writes committed with it; false when it had none or they were dropped. */
      alongside: boolean;
    }
  | { ok: false; error: unknown };

export interface RetryOptions {
  /** Load-decide-append rounds before a persisting concurrent change surfaces as CONFLICT. */
  attempts: number;
  /** The random pause before round n+1 is up to `min(maxJitterMs, baseJitterMs * 2^(n-1))`. */
  baseJitterMs: number;
  maxJitterMs: number;
  /**
   * Decides the first round on the state this process remembers, without reading the stream: for a
   * writer that loaded the aggregate moments ago and is most likely its only writer since (a job
   * recording its outcome), one round trip less. The append still expects the remembered revision, so a
   * stream that moved since costs a refused append and then a normal round; a refusal or an empty
   * decision on the remembered state is decided again on a fresh load. Nothing remembered: a normal round.
   */
  fromRemembered?: boolean;
  /**
   * Holds the stream's lock from the read to the commit where the store can (`EventStore.appendDecided`),
   * for a stream written by several processes at once (a project's quota): their rounds queue instead of
   * failing each other's appends. A round costs one round trip more; a lock wait holds a connection.
   */
  lockFirst?: boolean;
}

const FEW_RETRIES: RetryOptions = { attempts: 3, baseJitterMs: 0, maxJitterMs: 0 };

/** FEW_RETRIES, the first round decided on the remembered state (`RetryOptions.fromRemembered`). */
export const FROM_REMEMBERED: RetryOptions = { ...FEW_RETRIES, fromRemembered: true };

const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
