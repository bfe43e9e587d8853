import { type QuotaLimits, type QuotaState, type QuotaUsage, ZERO_QUOTA_USAGE } from '@hcp/domain';

/** A project's quota as API.md shows it: limits (null when ops never set any: unlimited) and usage. */
export interface QuotaView {
  project_id: string;
  limits: QuotaLimits | null;
  usage: QuotaUsage;
}

/** Built field by field, so the reservations (VM ids) and any later internal field never leak. */
export function presentQuota(projectId: string, source: Pick<QuotaState, 'limits' | 'usage'> | null): QuotaView {
  const limits = source?.limits ?? null;
  const usage = source?.usage ?? ZERO_QUOTA_USAGE;
  return {
    project_id: projectId,
    limits: limits && {
      instances: limits.instances,
      vcpus: limits.vcpus,
      ram_mb: limits.ram_mb,
      disk_gb: limits.disk_gb,
    },
    usage: { instances: usage.instances, vcpus: usage.vcpus, ram_mb: usage.ram_mb, disk_gb: usage.disk_gb },
  };
}
