import { DomainEvent } from './domain-event';

/** Lifts one event from `fromVersion` to `fromVersion + 1`. */
export type Upcaster = (data: Record<string, unknown>) => Record<string, unknown>;

/**
 * The upcaster chain for stored events. Readers (aggregates, projections) only ever see the current
 * version of each event type, so old events in the store stay exactly as they were written.
 */
export class UpcasterRegistry {
  private readonly chains = new Map<string, Map<number, Upcaster>>();

  constructor(private readonly currentVersions: Readonly<Record<string, number>>) {}

  register(type: string, fromVersion: number, upcaster: Upcaster): this {
    const chain = this.chains.get(type) ?? new Map<number, Upcaster>();
    chain.set(fromVersion, upcaster);
    this.chains.set(type, chain);
    return this;
  }

  knows(type: string): boolean {
    return this.currentVersions[type] !== undefined;
  }

  /** Returns the event at its current version, or throws when a step of the chain is missing. */
  upcast(event: DomainEvent): DomainEvent {
    const target = this.currentVersions[event.type];
    if (target === undefined) throw new Error(`unknown event type ${event.type}`);
    if (event.version > target)
      throw new Error(`${event.type} v${event.version} is newer than this release (v${target})`);
    let version = event.version;
    let data = event.data as Record<string, unknown>;
    while (version < target) {
      const step = this.chains.get(event.type)?.get(version);
      if (!step) throw new Error(`no upcaster for ${event.type} v${version}`);
      data = step(data);
      version += 1;
    }
    return { type: event.type, version, data };
  }
}
