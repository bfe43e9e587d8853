import * as path from 'node:path';
import { Client } from 'pg';
import { BenchContext } from '../lib/context';
import { runNode } from '../lib/proc';
import type { ScenarioResult } from '../lib/report';
import { appendVmHistory } from '../lib/seed';
import { log, round } from '../lib/util';

/**
 * Rebuild of the VM read model from position zero: N VMs x 4 events appended straight into hcp_events
 * (1,000,000 events for 250,000 VMs in full mode), vacuumed and analysed as an old table would be,
 * then HCP's ProjectionRunner with the vm-read-model projection (bench/children/rebuild-vm-read-model.ts,
 * a process of its own) runs from a fresh checkpoint until it has applied the last event. The
 * baseline projector does the same into its own table.
 */
export async function rebuild(ctx: BenchContext): Promise<ScenarioResult> {
  const db = await ctx.database();
  const ts = (file: string) => ctx.script(file);
  await runNode([...ts('bench/children/rebuild-vm-read-model.ts'), 'migrate', db.url]);
  const client = new Client({ connectionString: db.url });
  await client.connect();
  try {
    let started = Date.now();
    const events = await appendVmHistory(client, ctx.sizes.rebuildVms);
    await client.query('VACUUM (ANALYZE) hcp_events');
    log(
      `rebuild: appended ${events.toLocaleString('en-US')} events for ${ctx.sizes.rebuildVms.toLocaleString('en-US')} VMs in ${((Date.now() - started) / 1000).toFixed(1)} s`,
    );
    const last = (await client.query(`SELECT max(position)::text AS p FROM hcp_events`)).rows[0].p as string;

    log('rebuild: HCP ProjectionRunner + vm-read-model from position 0');
    const nodeFlags = ctx.profileDir ? ['--cpu-prof', `--cpu-prof-dir=${path.join(ctx.profileDir, 'rebuild')}`] : [];
    started = Date.now();
    const hcp = JSON.parse(
      (await runNode([...ts('bench/children/rebuild-vm-read-model.ts'), 'rebuild', db.url, last], {}, nodeFlags))
        .trim()
        .split('\n')
        .pop()!,
    ) as { seconds: number; rssPeakMb: number };
    const rowsBuilt = Number((await client.query(`SELECT count(*)::text AS n FROM vm_read_model`)).rows[0].n);
    if (ctx.profileDir) {
      const { summarizeProfile } = await import('../lib/profile');
      ctx.profiles.rebuild = summarizeProfile(path.join(ctx.profileDir, 'rebuild'));
    }

    log('rebuild: baseline projector from position 0');
    const base = JSON.parse(
      (await runNode([...ts('bench/baseline/projector.ts'), db.url, last])).trim().split('\n').pop()!,
    ) as { seconds: number; applied: number; rssMb: number };
    const scenario = `rebuild vm-read-model: ${events.toLocaleString('en-US')} events, ${ctx.sizes.rebuildVms.toLocaleString('en-US')} VMs`;
    return {
      name: 'rebuild',
      rows: [
        {
          scenario,
          metric: 'events per second',
          unit: '1/s',
          hcp: round(events / hcp.seconds, 0),
          baseline: round(events / base.seconds, 0),
          target: { op: '>', value: 20_000 },
        },
        { scenario, metric: 'duration', unit: 's', hcp: round(hcp.seconds), baseline: round(base.seconds) },
        { scenario, metric: 'peak RSS', unit: 'MB', hcp: round(hcp.rssPeakMb), baseline: round(base.rssMb) },
      ],
      details: { events, vms: ctx.sizes.rebuildVms, rowsBuilt, hcp, baseline: base },
    };
  } finally {
    await client.end();
  }
}
