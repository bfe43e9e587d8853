import { MigrationInterface, QueryRunner } from 'typeorm';
import { dropPostgresEventStoreGuardIndexLookups, installPostgresEventStoreGuardIndexLookups } from '@hcp/eventstore';

/**
 * The append guard looks streams and event ids up through their indexes, whatever the event table held
 * when a session first planned it (see installPostgresEventStoreGuardIndexLookups).
 */
export class EventStoreAppendGuardIndexLookups1767744000090 implements MigrationInterface {
  name = 'EventStoreAppendGuardIndexLookups1767744000090';

  async up(q: QueryRunner): Promise<void> {
    await installPostgresEventStoreGuardIndexLookups(q);
  }

  async down(q: QueryRunner): Promise<void> {
    await dropPostgresEventStoreGuardIndexLookups(q);
  }
}
