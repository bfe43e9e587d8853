import cluster from 'node:cluster';
import { spawnSync } from 'node:child_process';
import { defaultApiProcesses, loadConfig } from '../config/hcp-config';
import { apiNodeFlags, childSpecs, schedulingPolicy } from './child-specs';

/** Connections all children may open: two pools per process. */
function connectionsOf(env: NodeJS.ProcessEnv, connectionLimit: number): { total: number; api: number; bg: number } {
  const specs = childSpecs(loadConfig(env), { shared: {}, connectionLimit, env });
  const api = Number(specs.api[0].env.HCP_DB_POOL_SIZE);
  const bg = Number(specs.background.env.HCP_DB_POOL_SIZE);
  return { total: 2 * bg + 2 * api * specs.api.length, api, bg };
}

describe('launcher child specs', () => {
  it.each([
    [50, 1],
    [50, 2],
    [97, 2],
    [97, 4],
    [200, 8],
  ])(
    'fits every pool into a server allowing %i connections with %i API processes, leaving 10 to others',
    (limit, n) => {
      const { total } = connectionsOf({ HCP_API_PROCESSES: String(n) }, limit);
      expect(total).toBeLessThanOrEqual(limit - 10);
    },
  );

  it('keeps pools of 20 on a server with room for them', () => {
    expect(connectionsOf({ HCP_API_PROCESSES: '2', DATABASE_URL: 'postgres://h/db' }, 500)).toMatchObject({
      api: 20,
      bg: 20,
    });
  });

  it('sizes pools on a database of its own as on the embedded one (a default server has 100 connections)', () => {
    const external = connectionsOf({ HCP_API_PROCESSES: '2', DATABASE_URL: 'postgres://h/db' }, 97);
    expect(external.total).toBeLessThanOrEqual(87);
    expect(external).toEqual(connectionsOf({ HCP_API_PROCESSES: '2' }, 97));
  });

  it('leaves a pool size set by hand to the operator', () => {
    expect(connectionsOf({ HCP_API_PROCESSES: '4', HCP_DB_POOL_SIZE: '7' }, 50)).toMatchObject({ api: 7, bg: 7 });
  });

  it('gives the worker and projections the concurrency set by hand, else 128', () => {
    const specs = (env: NodeJS.ProcessEnv) => childSpecs(loadConfig(env), { shared: {}, connectionLimit: 97, env });
    expect(specs({}).background.env.HCP_WORKER_CONCURRENCY).toBe('128');
    expect(specs({ HCP_WORKER_CONCURRENCY: '4' }).background.env.HCP_WORKER_CONCURRENCY).toBe('4');
  });

  it('gives API processes two malloc arenas unless the operator set their number', () => {
    const apiEnv = (env: NodeJS.ProcessEnv) =>
      childSpecs(loadConfig(env), { shared: {}, connectionLimit: 97, env }).api[0]!.env;
    expect(apiEnv({}).MALLOC_ARENA_MAX).toBe('2');
    expect(apiEnv({ MALLOC_ARENA_MAX: '4' }).MALLOC_ARENA_MAX).toBe('4');
  });

  it('gives API processes 8 MB semi-spaces unless HCP_API_SEMI_SPACE_MB says otherwise, and the worker V8 defaults', () => {
    const specs = (env: NodeJS.ProcessEnv) => childSpecs(loadConfig(env), { shared: {}, connectionLimit: 97, env });
    expect(specs({}).api[0]!.nodeFlags).toContain('--max-semi-space-size=8');
    expect(specs({ HCP_API_SEMI_SPACE_MB: '16' }).api[0]!.nodeFlags).toContain('--max-semi-space-size=16');
    expect(specs({ HCP_API_SEMI_SPACE_MB: '16' }).background.nodeFlags ?? []).toEqual([]);
  });

  it('gives an API process the young generation its setting names, no larger', () => {
    // Objects kept past a few scavenges make V8 grow the young generation to its largest.
    const fill = `const v8 = require('v8'); let kept = [];
      for (let i = 0; i < 3e6; i++) { kept.push({ i, s: 'x' + i }); if (kept.length > 2e5) kept = kept.slice(1e5); }
      const young = v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space');
      process.stdout.write(String(young.space_size / 1048576));`;
    for (const size of ['4', '8']) {
      const flags = apiNodeFlags(loadConfig({ HCP_API_SEMI_SPACE_MB: size }));
      const run = spawnSync(process.execPath, [...flags, '-e', fill], { encoding: 'utf8' });
      // Both halves: the semi-space in use and the one a scavenge copies into.
      expect(Number(run.stdout)).toBe(2 * Number(size));
    }
  });

  it('gives API processes only flags this Node accepts, allocation-site pretenuring off among them', () => {
    const flags = apiNodeFlags(loadConfig({}));
    expect(flags).toContain('--no-allocation-site-pretenuring');
    const run = spawnSync(process.execPath, [...flags, '-e', '0'], { encoding: 'utf8' });
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
  });

  it('runs an API process per core but the one the worker and projections need, and at least one', () => {
    expect([1, 2, 4, 16].map(defaultApiProcesses)).toEqual([1, 1, 3, 15]);
  });

  it('lets one API process accept its own connections, and hands them round to several', () => {
    expect(schedulingPolicy(1, {})).toBe(cluster.SCHED_NONE);
    expect(schedulingPolicy(3, {})).toBe(cluster.SCHED_RR);
    expect(schedulingPolicy(1, { NODE_CLUSTER_SCHED_POLICY: 'rr' })).toBe(cluster.SCHED_RR);
    expect(schedulingPolicy(3, { NODE_CLUSTER_SCHED_POLICY: 'none' })).toBe(cluster.SCHED_NONE);
  });
});
