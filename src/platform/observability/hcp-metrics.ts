import { Injectable } from '@nestjs/common';
import { Counter, Gauge, Histogram } from 'prom-client';

/**
 * HCP's own metrics, served at /metrics with the process defaults. One place declares them all, so a
 * dashboard author finds every name and label here.
 */
@Injectable()
export class HcpMetrics {
  readonly httpRequests = new Histogram({
    name: 'hcp_http_request_duration_seconds',
    help: 'HTTP requests by method, route pattern and status, with their latency',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
  });

  readonly jobsFinished = new Counter({
    name: 'hcp_jobs_finished_total',
    help: 'Jobs finished, each once: by type, provider type (none when it ended without a provider call: settled, out of attempts, past its deadline, marked failed by ops) and outcome (succeeded or the taxonomy code)',
    labelNames: ['type', 'provider', 'outcome'] as const,
  });

  readonly providerCalls = new Histogram({
    name: 'hcp_provider_call_duration_seconds',
    help: 'Driver calls by provider type, operation and outcome (ok or the taxonomy code)',
    labelNames: ['provider', 'operation', 'outcome'] as const,
    buckets: [0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
  });

  // Per process: each worker process bounds its own calls (HCP_PROVIDER_CALLS_PER_CLUSTER), so sum() across them.
  readonly providerCallSlots = new Gauge({
    name: 'hcp_provider_call_slots',
    help: "Changes at providers of a type (create, power, delete, tags) this process is running (state=running), and jobs waiting for a free one of their cluster's HCP_PROVIDER_CALLS_PER_CLUSTER (state=waiting), all clusters of the type together",
    labelNames: ['provider', 'state'] as const,
  });

  readonly jobDuration = new Histogram({
    name: 'hcp_job_duration_seconds',
    help: 'Time from a job being queued to its end, by type and outcome (succeeded or failed; the code is in hcp_jobs_finished_total)',
    labelNames: ['type', 'outcome'] as const,
    buckets: [0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600],
  });
  // The queue gauges are sampled by every worker process from the shared queue table: each reports the
  // whole queue, so dashboards and alerts take max() across processes, never sum().
  readonly jobQueueJobs = new Gauge({
    name: 'hcp_job_queue_jobs',
    help: 'Unfinished jobs in the queue by state: due (waiting for a worker), scheduled (a retry waiting for its time), running (leased by a live worker), lease_expired (its worker stopped answering; due again). Sampled by worker processes',
    labelNames: ['state'] as const,
  });
  readonly jobQueueOldestDue = new Gauge({
    name: 'hcp_job_queue_oldest_due_seconds',
    help: 'How long the longest-waiting due job has waited for a worker (0 when none waits). Sampled by worker processes',
  });
  readonly jobQueueOldestOpen = new Gauge({
    name: 'hcp_job_queue_oldest_open_seconds',
    help: 'Age of the oldest unfinished job since it was queued (0 when none). Past HCP_JOB_DEADLINE_MS the deadline sweep should have failed it. Sampled by worker processes',
  });

  readonly leaseExpiries = new Counter({
    name: 'hcp_job_lease_expiries_total',
    help: 'Job attempts written off because their lease expired',
  });
  readonly jobRetries = new Counter({
    name: 'hcp_job_retries_total',
    help: 'Job attempts that failed and were scheduled again',
    labelNames: ['code'] as const,
  });

  readonly projectionPosition = new Gauge({
    name: 'hcp_projection_position',
    help: 'Last event position applied, per projection',
    labelNames: ['projection'] as const,
  });
  readonly projectionLag = new Gauge({
    name: 'hcp_projection_lag_events',
    help: 'Events in the store not yet applied, per projection',
    labelNames: ['projection'] as const,
  });
  readonly projectionDeadLetters = new Counter({
    name: 'hcp_projection_dead_letters_total',
    help: 'Events a projection could not apply and recorded as dead letters, per projection',
    labelNames: ['projection'] as const,
  });
  readonly projectionDeadLettersOpen = new Gauge({
    name: 'hcp_projection_dead_letters',
    help: 'Open dead letters (neither resolved nor skipped), per projection',
    labelNames: ['projection'] as const,
  });
  readonly projectionFailures = new Counter({
    name: 'hcp_projection_failures_total',
    help: 'Failures of a projection: a batch or a lone event that did not apply, or a run that ended in error and restarts',
    labelNames: ['projection'] as const,
  });
  readonly unknownEvents = new Counter({
    name: 'hcp_events_unknown_total',
    help: 'Events a projection skipped because this release does not know their type, per projection and type',
    labelNames: ['projection', 'type'] as const,
  });

  readonly consoleConnections = new Counter({
    name: 'hcp_console_connections_total',
    help: 'Console websocket connections, by outcome (connected or the taxonomy code of the refusal)',
    labelNames: ['outcome'] as const,
  });
  readonly consolesOpen = new Gauge({ name: 'hcp_consoles_open', help: 'Consoles this process is relaying now' });
  readonly refusals = new Counter({
    name: 'hcp_refusals_total',
    help: 'Refused requests (http) and console connections (console), by what was written: recorded (one event), counted (in a summary or only here, past the budget) or rate_limited (answered 429, no write), not_recorded (console: the session is over, or the append failed)',
    labelNames: ['channel', 'outcome'] as const,
  });

  readonly unhandledErrors = new Counter({
    name: 'hcp_unhandled_errors_total',
    help: 'Errors no code handled (unhandled_rejection, uncaught_exception), logged and survived: each one is a bug to fix',
    labelNames: ['kind'] as const,
  });
  readonly unavailableAnswers = new Counter({
    name: 'hcp_unavailable_answers_total',
    help: 'Requests answered 503 with Retry-After because HCP could not serve them, by reason (database, event_store, schema, draining)',
    labelNames: ['reason'] as const,
  });

  readonly reconcileDrift = new Counter({
    name: 'hcp_reconcile_drift_total',
    help: "Differences between HCP's record of a VM and its provider that reconcile recorded (power_state, addresses, vanished) or repaired (tags)",
    labelNames: ['kind'] as const,
  });
  readonly reconcileDuration = new Histogram({
    name: 'hcp_reconcile_duration_seconds',
    help: 'How long one reconcile pass over a cluster took (its listing, the comparison and what it recorded), per provider type',
    labelNames: ['provider'] as const,
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
  });
  readonly reconcileFailures = new Counter({
    name: 'hcp_reconcile_failures_total',
    help: 'Reconcile passes over a cluster that failed (provider unreachable, database error); the next pass runs as planned',
  });
  readonly orphansOpen = new Gauge({
    name: 'hcp_orphans',
    help: 'Provider resources carrying an HCP id without a live VM that wait for ops (open, destroying or destroy failed), per provider id',
    labelNames: ['provider'] as const,
  });
  readonly orphanActions = new Counter({
    name: 'hcp_orphan_actions_total',
    help: 'What became of orphans: adopted, destroyed or destroy_failed (by the destroy job), per provider id',
    labelNames: ['action', 'provider'] as const,
  });

  readonly failedCreateCleanups = new Counter({
    name: 'hcp_failed_create_cleanups_total',
    help: 'Provider VMs of creates that failed for good, by what their cleanup did: removed (or nothing was there), failed (left for the orphan list), skipped (a newer request owns the VM)',
    labelNames: ['outcome'] as const,
  });
  readonly consoleSessionsSwept = new Counter({
    name: 'hcp_console_sessions_swept_total',
    help: 'Console sessions the sweeper closed because the HCP instance relaying them died, or that were never connected in time',
    labelNames: ['reason'] as const,
  });
  readonly consoleSweepFailures = new Counter({
    name: 'hcp_console_sweep_failures_total',
    help: 'Runs of the console session sweeper that failed (logged; the next run goes on)',
  });

  readonly hosts = new Gauge({
    name: 'hcp_hosts',
    help: 'Hosts of agent clusters, by state (active, revoked) and online (heartbeat within HCP_HOST_HEARTBEAT_TIMEOUT_MS: true, false)',
    labelNames: ['state', 'online'] as const,
  });
  readonly hostEnrollments = new Counter({
    name: 'hcp_host_enrollments_total',
    help: 'Enrollment attempts of host agents, by outcome (enrolled, re_enrolled, token_invalid, token_expired, identity_conflict, cluster_gone)',
    labelNames: ['outcome'] as const,
  });
  readonly internalAuthRefusals = new Counter({
    name: 'hcp_internal_auth_refusals_total',
    help: 'Requests to the internal router refused for their credential (missing, unknown, revoked) or their rate (rate_limited)',
    labelNames: ['reason'] as const,
  });

  readonly publishFailures = new Counter({
    name: 'hcp_publish_failures_total',
    help: 'Failed publications of audit or metering records',
    labelNames: ['sink'] as const,
  });
  readonly publishDuration = new Histogram({
    name: 'hcp_publish_duration_seconds',
    help: 'Publish calls of audit or metering records (Kafka: until every in-sync replica acknowledged), per sink and outcome (ok, failed)',
    labelNames: ['sink', 'outcome'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
  });
  readonly publishedMessages = new Counter({
    name: 'hcp_published_messages_total',
    help: 'Audit or metering messages delivered (Kafka: acknowledged), per sink',
    labelNames: ['sink'] as const,
  });

  readonly providerUp = new Gauge({
    name: 'hcp_provider_up',
    help: 'Per provider id: 1 when the last periodic connectivity check (worker processes, every HCP_PROVIDER_HEALTH_INTERVAL_MS) reached it, 0 when it found it unreachable',
    labelNames: ['provider'] as const,
  });

  constructor() {
    // Series an alert watches for its first increase exist from the start at 0: a counter that appears
    // with its first error has no earlier sample, and increase() would miss that error.
    for (const kind of ['unhandled_rejection', 'uncaught_exception']) this.unhandledErrors.inc({ kind }, 0);
  }
}
