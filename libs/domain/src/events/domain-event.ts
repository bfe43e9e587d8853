/**
 * Events are facts in the past tense, versioned by `version`. A released (type, version) is never
 * edited: a new shape gets a new version and an upcaster from the old one (see upcasters.ts).
 */
export interface DomainEvent<TType extends string = string, TData extends object = object> {
  type: TType;
  version: number;
  data: TData;
}

/** Who asked and under which request: carried in event metadata, never in the business data. */
export interface EventContext {
  actor: string;
  trace_id: string;
  occurred_at: string;
}
