import { Injectable, Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { conflict, HcpError, hostEvent, HostEnrolled, HostEnrollmentCreated, notFound } from '@hcp/domain';
import type { EnrollRequest, EnrollResponse } from '@hcp/host-protocol';
import { OpsCatalogQueries } from '../../ops';
import { HcpMetrics } from '../../platform/observability/hcp-metrics';
import { newBootstrapToken, newHostCredential, secretDigest } from '../credentials/host-secrets';
import { HostEventsRecorder } from '../host-events.recorder';
import { HostStore } from '../host.store';

/** Provider types whose clusters are run by host agents (enrolled hosts), not reached by HCP directly. */
export const AGENT_PROVIDER_TYPES: readonly string[] = ['libvirt', 'hyperv'];
export const ENROLLMENT_TTL_DEFAULT_S = 15 * 60;
export const ENROLLMENT_TTL_MAX_S = 24 * 60 * 60;

export interface CreatedEnrollment {
  id: string;
  cluster_id: string;
  /** Shown once: only its digest is kept. */
  token: string;
  expires_at: string;
}

interface EnrollmentRow {
  id: string;
  cluster_id: string;
  expired: boolean;
  host_id: string | null;
  identity: string | null;
}

/**
 * Bootstrap enrollment: ops create a short-lived token for a cluster; a host presents it once, with its
 * identity, and gets its own credential. A retry with the same token and identity (the first answer was
 * lost) enrolls the same host again with a fresh credential, which ends the earlier one.
 */
@Injectable()
export class EnrollmentService {
  private readonly logger = new Logger('hosts');

  constructor(
    private readonly db: DataSource,
    private readonly ops: OpsCatalogQueries,
    private readonly hosts: HostStore,
    private readonly events: HostEventsRecorder,
    private readonly metrics: HcpMetrics,
  ) {}

  async create(clusterId: string, ttlSeconds: number, actor: string, traceId: string): Promise<CreatedEnrollment> {
    await this.agentCluster(clusterId);
    const id = randomUUID();
    const token = newBootstrapToken();
    const rows: Array<{ expires_at: Date }> = await this.db.query(
      `INSERT INTO host_enrollments (id, cluster_id, token_digest, created_by, expires_at)
       VALUES ($1, $2, $3, $4, now() + make_interval(secs => $5)) RETURNING expires_at`,
      [id, clusterId, secretDigest(token), actor, ttlSeconds],
    );
    const expiresAt = rows[0]!.expires_at.toISOString();
    await this.events.record(
      hostEvent<HostEnrollmentCreated>('HostEnrollmentCreated', {
        enrollment_id: id,
        cluster_id: clusterId,
        expires_at: expiresAt,
        created_by: actor,
      }),
      actor,
      traceId,
    );
    return { id, cluster_id: clusterId, token, expires_at: expiresAt };
  }

  async enroll(request: EnrollRequest, clientAddress: string | null, traceId: string): Promise<EnrollResponse> {
    const credential = newHostCredential();
    let outcome = 'enrolled';
    try {
      const enrolled = await this.db.transaction(async (tx) => {
        const rows: EnrollmentRow[] = await tx.query(
          `SELECT id, cluster_id, expires_at <= now() AS expired, host_id, identity
           FROM host_enrollments WHERE token_digest = $1 FOR UPDATE`,
          [secretDigest(request.token)],
        );
        const enrollment = rows[0];
        if (!enrollment) throw refused('token_invalid', 'the enrollment token is not valid');
        if (enrollment.expired) throw refused('token_expired', 'the enrollment token has expired');
        if (enrollment.identity !== null && enrollment.identity !== request.identity)
          throw refused('identity_conflict', conflict('the enrollment token was used by another host'));
        if (!(await this.ops.find('cluster', enrollment.cluster_id)))
          throw refused('cluster_gone', 'the enrollment token is not valid');
        const host = await this.hosts.enroll(
          tx,
          {
            cluster_id: enrollment.cluster_id,
            identity: request.identity,
            hostname: request.hostname,
            agent_version: request.agent_version ?? null,
          },
          enrollment.id,
          secretDigest(credential),
        );
        await tx.query(
          `UPDATE host_enrollments SET used_at = COALESCE(used_at, now()), host_id = $2, identity = $3 WHERE id = $1`,
          [enrollment.id, host.id, request.identity],
        );
        return { enrollment, host };
      });
      outcome = enrolled.host.created ? 'enrolled' : 're_enrolled';
      await this.recordEnrolled(enrolled.enrollment, enrolled.host, request, clientAddress, traceId);
      return { host_id: enrolled.host.id, cluster_id: enrolled.enrollment.cluster_id, credential };
    } catch (err) {
      if (err instanceof Refusal) {
        outcome = err.outcome;
        throw err.error;
      }
      outcome = 'error';
      throw err;
    } finally {
      this.metrics.hostEnrollments.inc({ outcome });
    }
  }

  /** The host is enrolled whatever becomes of this record: a lost event is logged, the answer still given. */
  private async recordEnrolled(
    enrollment: EnrollmentRow,
    host: { id: string; created: boolean },
    request: EnrollRequest,
    clientAddress: string | null,
    traceId: string,
  ): Promise<void> {
    try {
      await this.events.record(
        hostEvent<HostEnrolled>('HostEnrolled', {
          host_id: host.id,
          cluster_id: enrollment.cluster_id,
          enrollment_id: enrollment.id,
          identity: request.identity,
          hostname: request.hostname,
          re_enrolled: !host.created,
          client_address: clientAddress?.slice(0, 64) ?? null,
        }),
        `host:${host.id}`,
        traceId,
      );
    } catch (err) {
      this.logger.error({ msg: 'could not record a host enrollment', host_id: host.id, trace_id: traceId, err });
    }
  }

  /** The cluster, if it exists and its provider runs host agents. */
  private async agentCluster(clusterId: string): Promise<void> {
    const cluster = await this.ops.find('cluster', clusterId);
    if (!cluster) throw notFound('cluster');
    const provider = await this.ops.find('provider', cluster.spec.provider_id);
    if (!provider || !AGENT_PROVIDER_TYPES.includes(provider.spec.type))
      throw new HcpError(
        'FEATURE_NOT_SUPPORTED',
        `hosts enroll only in clusters of a provider run by host agents (${AGENT_PROVIDER_TYPES.join(', ')})`,
        { provider_type: provider?.spec.type ?? null },
      );
  }
}

/** A refused enrollment with the outcome the metric counts it under. */
class Refusal extends Error {
  readonly error: HcpError;
  constructor(
    readonly outcome: string,
    error: string | HcpError,
  ) {
    super(typeof error === 'string' ? error : error.message);
    this.error = typeof error === 'string' ? new HcpError('UNAUTHORIZED', error) : error;
  }
}
const refused = (outcome: string, error: string | HcpError) => new Refusal(outcome, error);
