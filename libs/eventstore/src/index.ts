export * from './event-store.port';
export * from './codec/domain-event-codec';
export * from './postgres/postgres-event-store';
export { prepared, preparedName } from './postgres/prepared-statement';
export type { EventStoreDbEventStoreOptions } from './eventstoredb/eventstoredb-event-store';
export { openEventStoreDb } from './eventstoredb/open-eventstoredb';
export * from './in-memory/in-memory-event-store';
export * from './stream-id';
