import { Client } from 'pg';
import { BenchContext, SEEDED } from '../lib/context';
import { runLoad, LoadSpec } from '../lib/load';
import { noPeers, PEERS, PeerHandle, PeerValues, seedPeerVms } from '../lib/peers';
import { RssSampler } from '../lib/proc';
import { cpuPerOk, msPerOk } from '../lib/rss-tree';
import type { Row, ScenarioResult } from '../lib/report';
import { seedVmReadModel } from '../lib/seed';
import { log, round } from '../lib/util';

/**
 * Read path: VM detail (a random VM of the seeded set per request) and the first 50-item list page of
 * one project, with 10,000 and then 100,000 VMs of that project in the read model (seeded with SQL),
 * HCP and the baseline measured back to back at each size. The same process serves both sizes, so the
 * peak RSS at 100,000 is the memory figure of DESIGN.md.
 */
export async function readPath(ctx: BenchContext): Promise<ScenarioResult> {
  const { sizes } = ctx;
  const db = await ctx.database();
  const { hcp, stop } = await ctx.hcp('read', { databaseUrl: db.url });
  const baseline = await ctx.baseline(db.url);
  const baselineRss = new RssSampler(baseline.process.pid).start();
  const client = new Client({ connectionString: db.url });
  await client.connect();
  // The peers serve detail reads from their projected table, on a database of their own seeded with the
  // same VMs; they have no list call (their list rows stay '-').
  const peerDb = await ctx.database();
  const peers: PeerHandle[] = [];
  for (const name of PEERS) peers.push(await ctx.peer(name, peerDb.url));
  const peerClient = new Client({ connectionString: peerDb.url });
  await peerClient.connect();
  const rows: Row[] = [];
  const details: Record<string, unknown> = {};
  try {
    const headers = { authorization: `Bearer ${hcp.token({ bench: 'viewer' })}` };
    let seeded = 0;
    for (const size of sizes.readSizes) {
      const started = Date.now();
      await seedVmReadModel(client, 'bench', seeded + 1, size, SEEDED);
      await seedPeerVms(peerClient, 'bench', seeded + 1, size, SEEDED);
      seeded = size;
      log(`read: seeded ${size.toLocaleString('en-US')} VMs in ${((Date.now() - started) / 1000).toFixed(1)} s`);
      const c = sizes.readConnections;
      for (const kind of ['detail', 'list'] as const) {
        const spec: LoadSpec = {
          url: hcp.baseUrl,
          method: 'GET',
          path: kind === 'detail' ? '/v1/projects/bench/vms/{vm}' : '/v1/projects/bench/vms?limit=50',
          headers,
          connections: c,
          durationS: sizes.readS,
          vmCount: size,
        };
        await runLoad({ ...spec, durationS: sizes.warmupS });
        hcp.rss.beginWindow();
        log(`read: HCP ${kind} at ${size.toLocaleString('en-US')} VMs, ${c} clients, ${sizes.readS} s`);
        const h = await ctx.measure(hcp, `read-${kind}-${size}`, () => runLoad(spec));
        const hcpPeak = hcp.rss.peakMb();
        const hcpRssByProcessMb = hcp.rss.peaksByProcess();
        const hcpRssSumMb = round(hcp.rss.sumPeakMb());
        const hcpCpu = cpuPerOk(hcp.rss.cpuMsByProcess(), h.ok);
        await runLoad({ ...spec, url: baseline.url, durationS: sizes.warmupS });
        baselineRss.beginWindow();
        log(`read: baseline ${kind} at ${size.toLocaleString('en-US')} VMs`);
        const b = await runLoad({ ...spec, url: baseline.url });
        const baselinePeak = baselineRss.peakMb();
        const baselineCpuMs = msPerOk(baselineRss.cpuMs(), b.ok);
        const peerResults: Record<string, unknown> = {};
        const peerValue = {
          okPerS: noPeers(),
          p50: noPeers(),
          p99: noPeers(),
          rss: noPeers(),
          cpu: noPeers(),
        } satisfies Record<string, PeerValues>;
        if (kind === 'detail') {
          for (const peer of peers) {
            const peerSpec = { ...spec, url: peer.url };
            await runLoad({ ...peerSpec, durationS: sizes.warmupS });
            peer.rss.beginWindow();
            log(`read: ${peer.name} ${kind} at ${size.toLocaleString('en-US')} VMs`);
            const r = await runLoad(peerSpec);
            const peak = round(peer.rss.peakMb());
            const cpuMsPerOk = msPerOk(peer.rss.cpuMs(), r.ok);
            peerResults[peer.name] = { ...r, peakRssMb: peak, cpuMsPerOk };
            peerValue.cpu[peer.name] = cpuMsPerOk;
            peerValue.okPerS[peer.name] = round(r.okPerS);
            peerValue.p50[peer.name] = round(r.latencyMs?.p50, 2);
            peerValue.p99[peer.name] = round(r.latencyMs?.p99, 2);
            peerValue.rss[peer.name] = peak;
          }
        }
        details[`${kind}@${size}`] = {
          hcp: {
            ...h,
            peakRssMb: round(hcpPeak),
            rssByProcessMb: hcpRssByProcessMb,
            rssSumMb: hcpRssSumMb,
            cpuMsPerOk: hcpCpu,
          },
          baseline: { ...b, peakRssMb: round(baselinePeak), cpuMsPerOk: baselineCpuMs },
          ...peerResults,
        };
        const scenario = `read: ${kind === 'detail' ? 'GET /vms/{id}' : 'GET /vms?limit=50'} @ ${size.toLocaleString('en-US')} VMs, ${c} clients`;
        const bad = h.requests - h.ok;
        rows.push(
          {
            scenario,
            metric: 'requests per second',
            unit: '1/s',
            hcp: round(h.okPerS),
            baseline: round(b.okPerS),
            peers: peerValue.okPerS,
            ...(bad ? { note: `${bad} non-2xx ${JSON.stringify(h.statusCounts)}` } : {}),
          },
          {
            scenario,
            metric: 'p50',
            unit: 'ms',
            hcp: round(h.latencyMs?.p50, 2),
            baseline: round(b.latencyMs?.p50, 2),
            peers: peerValue.p50,
          },
          {
            scenario,
            metric: 'p99',
            unit: 'ms',
            hcp: round(h.latencyMs?.p99, 2),
            baseline: round(b.latencyMs?.p99, 2),
            peers: peerValue.p99,
            target: { op: '<', value: 10 },
          },
          {
            scenario,
            metric: 'peak RSS',
            unit: 'MB',
            hcp: round(hcpPeak),
            baseline: round(baselinePeak),
            peers: peerValue.rss,
            ...(size >= 100_000 ? { target: { op: '<' as const, value: 250 } } : {}),
          },
          {
            scenario,
            metric: 'CPU per request (API processes)',
            unit: 'ms',
            hcp: hcpCpu.api,
            baseline: baselineCpuMs,
            peers: peerValue.cpu,
          },
        );
      }
    }
    details.hcpRssHwmMb = round(hcp.rss.hwmMb());
    return { name: 'read', rows, details };
  } finally {
    baselineRss.stop();
    await client.end();
    await peerClient.end();
    for (const peer of peers) await peer.stop();
    await baseline.stop();
    await stop();
  }
}
