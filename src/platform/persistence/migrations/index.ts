import { InitialSchema1767225600000 } from './1767225600000-initial-schema';
import { IdempotencyKeys1767312000000 } from './1767312000000-idempotency-keys';
import { ProjectQuotas1767398400000 } from './1767398400000-project-quotas';
import { OpsPlane1767484800000 } from './1767484800000-ops-plane';
import { AuditAndMetering1767571200000 } from './1767571200000-audit-and-metering';
import { ProjectionDeadLetters1767657600000 } from './1767657600000-projection-dead-letters';
import { OrphanReadModel1767744000002 } from './1767744000002-orphan-read-model';
import { ReconcileLeases1767744000010 } from './1767744000010-reconcile-leases';
import { ConsoleSessionHolds1767744000031 } from './1767744000031-console-session-holds';
import { Hosts1767744000040 } from './1767744000040-hosts';
import { HostCalls1767744000041 } from './1767744000041-host-calls';
import { ProjectionCheckpointMove1767744000050 } from './1767744000050-projection-checkpoint-move';
import { ProjectionCheckpointAfterWrites1767744000051 } from './1767744000051-projection-checkpoint-after-writes';
import { ProjectQuotaReservations1767744000060 } from './1767744000060-project-quota-reservations';
import { VmReadModelView1767744000070 } from './1767744000070-vm-read-model-view';
import { EventStoreAppendGuard1767744000080 } from './1767744000080-event-store-append-guard';
import { EventStoreAppendGuardIndexLookups1767744000090 } from './1767744000090-event-store-append-guard-index-lookups';

/** Every migration of this release, oldest first. Readiness compares the database against this list. */
export const MIGRATIONS = [
  InitialSchema1767225600000,
  IdempotencyKeys1767312000000,
  ProjectQuotas1767398400000,
  OpsPlane1767484800000,
  AuditAndMetering1767571200000,
  ProjectionDeadLetters1767657600000,
  OrphanReadModel1767744000002,
  ReconcileLeases1767744000010,
  ConsoleSessionHolds1767744000031,
  Hosts1767744000040,
  HostCalls1767744000041,
  ProjectionCheckpointMove1767744000050,
  ProjectionCheckpointAfterWrites1767744000051,
  ProjectQuotaReservations1767744000060,
  VmReadModelView1767744000070,
  EventStoreAppendGuard1767744000080,
  EventStoreAppendGuardIndexLookups1767744000090,
];
