import { openEventStoreDb } from '@hcp/eventstore';
import { describeEventStoreContract } from './event-store.contract';

const connectionString = process.env.EVENTSTORE_CONNECTION_STRING;

if (connectionString) {
  // Stream ids are unique per run, so the suite can share a server with anything else.
  describeEventStoreContract(
    'EventStoreDB',
    async () => {
      const store = await openEventStoreDb({ connectionString });
      return { store, appendsStreamByStream: true, cleanup: () => store.close() };
    },
    { appendDecided: false },
  );
} else {
  describe.skip('EventStoreDB event store contract (skipped: set EVENTSTORE_CONNECTION_STRING, e.g. esdb://localhost:2113?tls=false)', () => {
    it('runs the shared contract suite against a live EventStoreDB', () => undefined);
  });
}
