import { InMemoryEventStore } from '@hcp/eventstore';
import { describeEventStoreContract } from './event-store.contract';

// The store the application-layer specs run on must behave as the real adapters do.
describeEventStoreContract('in-memory', async () => {
  const store = new InMemoryEventStore();
  return { store, cleanup: () => store.close() };
});
