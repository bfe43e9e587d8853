import type { EventStore } from '../event-store.port';
import type { EventStoreDbEventStoreOptions } from './eventstoredb-event-store';

/**
 * The EventStoreDB adapter, loaded when a process asks for it: its gRPC client and protobuf runtime are
 * ~4 MB of heap (144 modules) that every process on the PostgreSQL store carried for nothing
 * (bench/README.md, "Issue #21 item 5").
 */
export async function openEventStoreDb(options: EventStoreDbEventStoreOptions): Promise<EventStore> {
  const { EventStoreDbEventStore } = await import('./eventstoredb-event-store');
  return new EventStoreDbEventStore(options);
}
