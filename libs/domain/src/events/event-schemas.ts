import { z } from 'zod/v4';
import { HcpError } from '../errors';
import { DomainEvent } from './domain-event';

/** The runtime schema of one event type's data at its current version. */
export type EventSchema = z.ZodType<object, unknown>;

/**
 * Ties a schema to its event's TypeScript type in both directions, at compile time: what the schema
 * accepts is an `E['data']`, and every `E['data']` the code can build is accepted by it (refinements such
 * as non-empty ids aside). So a schema cannot drift from the type it guards without the build failing.
 */
export function schemaFor<E extends DomainEvent>() {
  return <S extends z.ZodType<E['data'], unknown>>(
    schema: S & ([E['data']] extends [z.input<S>] ? unknown : 'the schema refuses data its event type allows'),
  ): S => schema;
}

/** An id that names a stream or a row: present and not the text of a missing value. */
export const idSchema = z
  .string()
  .min(1)
  .refine((s) => s !== 'undefined' && s !== 'null', { message: 'the text of a missing value' });

/**
 * Event data that fails its type's schema: a bug in the writer (refused at append), or a poison event in
 * the store (dead-lettered when read). The message names the type and the field, never the data.
 */
export class EventSchemaViolation extends HcpError {
  constructor(
    readonly eventType: string,
    readonly field: string,
    readonly problem: string,
  ) {
    super(
      'INTERNAL_ERROR',
      `${eventType} event data fails its schema at ${field}: ${problem}`,
      { event_type: eventType, field },
      false,
    );
    this.name = 'EventSchemaViolation';
  }
}

/** An event type this release has no schema for: nothing can vouch for its data, so it is not written. */
export class UnknownEventSchema extends HcpError {
  constructor(readonly eventType: string) {
    super('INTERNAL_ERROR', `no schema for event type ${eventType}`, { event_type: eventType }, false);
    this.name = 'UnknownEventSchema';
  }
}

/** type -> schema of its current version. Older versions are lifted by the upcasters, then checked. */
export class EventSchemaRegistry {
  constructor(private readonly schemas: Readonly<Record<string, EventSchema>>) {}

  has(type: string): boolean {
    return Object.hasOwn(this.schemas, type);
  }

  types(): string[] {
    return Object.keys(this.schemas);
  }

  /** Throws EventSchemaViolation (or UnknownEventSchema) unless the event's data is what its type says. */
  check(event: DomainEvent): void {
    if (!this.has(event.type)) throw new UnknownEventSchema(event.type);
    const result = this.schemas[event.type].safeParse(event.data);
    if (result.success) return;
    const issue = result.error.issues[0];
    throw new EventSchemaViolation(event.type, fieldOf(issue.path), problemOf(issue, valueAt(event.data, issue.path)));
  }
}

function fieldOf(path: ReadonlyArray<PropertyKey>): string {
  return path.length === 0 ? '(data)' : path.map(String).join('.');
}

/** What the data holds at an issue's path (zod 4 does not report it, so a missing field is told from it). */
function valueAt(data: unknown, path: ReadonlyArray<PropertyKey>): unknown {
  let value = data;
  for (const key of path) {
    if (typeof value !== 'object' || value === null || !Object.hasOwn(value, key)) return undefined;
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  return value;
}

/** What is wrong, in words that never repeat the value (zod's own messages may quote it). */
function problemOf(issue: z.core.$ZodIssue, value: unknown): string {
  switch (issue.code) {
    case 'invalid_type':
      return value === undefined ? `missing (expected ${issue.expected})` : `expected ${issue.expected}`;
    case 'invalid_value':
      return 'not one of the allowed values';
    case 'too_small':
      return `too small (minimum ${String(issue.minimum)})`;
    case 'too_big':
      return `too big (maximum ${String(issue.maximum)})`;
    case 'custom':
      return issue.message;
    default:
      return issue.code;
  }
}
