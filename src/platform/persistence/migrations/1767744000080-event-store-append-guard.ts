import { MigrationInterface, QueryRunner } from 'typeorm';
import { dropPostgresEventStoreAppendGuard, installPostgresEventStoreAppendGuard } from '@hcp/eventstore';

/**
 * The event store's append guard: the function an append calls in the script that inserts, so that an
 * append whose streams are where it expects them commits in one round trip instead of two.
 */
export class EventStoreAppendGuard1767744000080 implements MigrationInterface {
  name = 'EventStoreAppendGuard1767744000080';

  async up(q: QueryRunner): Promise<void> {
    await installPostgresEventStoreAppendGuard(q);
  }

  async down(q: QueryRunner): Promise<void> {
    await dropPostgresEventStoreAppendGuard(q);
  }
}
