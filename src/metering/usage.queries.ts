import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { computeUsage, MeteringRecord, UsageReport } from '@hcp/domain';

export interface UsageRequest {
  project?: string;
  from: Date;
  to: Date;
  detail: boolean;
}

/** The usage report of a period, computed by the domain's calculator from the metering projection's records. */
@Injectable()
export class UsageQueries {
  constructor(private readonly db: DataSource) {}

  async report(request: UsageRequest, now = new Date()): Promise<UsageReport & { project: string | null }> {
    // Every record before the period's end of each VM not deleted by its start: the state a VM is in at
    // `from` comes from its records before it.
    const rows: Array<Omit<MeteringRecord, 'effective_at'> & { effective_at: Date }> = await this.db.query(
      `WITH gone AS (
         SELECT vm_id FROM metering_records
          WHERE kind = 'vm.deleted' AND effective_at <= $2 AND ($1::text IS NULL OR project_id = $1))
       SELECT event_id, kind, project_id, vm_id, zone, flavor_id, resources, effective_at FROM metering_records
        WHERE ($1::text IS NULL OR project_id = $1) AND effective_at < $3 AND vm_id NOT IN (SELECT vm_id FROM gone)`,
      [request.project ?? null, request.from, request.to],
    );
    const records = rows.map((r) => ({ ...r, effective_at: new Date(r.effective_at).toISOString() }));
    const report = computeUsage(
      records,
      { from: request.from, to: request.to, until: now },
      { detail: request.detail },
    );
    return { project: request.project ?? null, ...report };
  }
}
