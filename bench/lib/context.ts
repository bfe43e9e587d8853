import * as path from 'node:path';
import { seededId } from '../../src/catalog/catalog-seed';
import { createBenchDatabase, BenchDatabase } from './db';
import { HcpOptions, HcpUnderTest, Runtime, scriptArgs } from './hcp';
import { PeerHandle, PeerName, startPeer } from './peers';
import { ManagedProcess } from './proc';
import type { ProfileSummary } from './profile';
import type { CatalogRefs } from './seed';
import { freePort } from './hcp';
import { log, sleep } from './util';

export interface Sizes {
  warmupS: number;
  /**
   * The one-project write row's warm-up, at its load: after 3 s at 10 clients an HCP API process still
   * spent 2.56 ms of CPU per create in the row, against 1.77 ms after write-cost.ts's 10 s at 100.
   */
  writeWarmupS: number;
  writeS: number;
  /** Also measure the write path with requests spread over 100 projects (diagnostic). */
  writeSpread: boolean;
  /** Also measure creates into a project that already holds this many VMs (0: skip). */
  writeExistingVms: number;
  /** Also measure two API processes on one database (the second with HCP_ROLES=api), 50 clients each (diagnostic). */
  writeScaleOut: boolean;
  readSizes: number[];
  readS: number;
  readConnections: number;
  lagS: number;
  lagJobsPerS: number;
  rebuildVms: number;
  jobsIsolated: number;
  jobsBurst: number;
  drainTimeoutS: number;
}

export const QUICK: Sizes = {
  warmupS: 1,
  writeWarmupS: 1,
  writeS: 4,
  writeSpread: false,
  writeExistingVms: 0,
  writeScaleOut: false,
  readSizes: [10_000],
  readS: 2,
  readConnections: 10,
  lagS: 3,
  lagJobsPerS: 500,
  rebuildVms: 5_000,
  jobsIsolated: 10,
  jobsBurst: 100,
  drainTimeoutS: 30,
};

export const FULL: Sizes = {
  warmupS: 3,
  writeWarmupS: 10,
  writeS: 15,
  writeSpread: true,
  writeExistingVms: 2_000,
  writeScaleOut: true,
  readSizes: [10_000, 100_000],
  readS: 10,
  readConnections: 10,
  lagS: 15,
  lagJobsPerS: 500,
  rebuildVms: 250_000,
  jobsIsolated: 50,
  jobsBurst: 1_000,
  drainTimeoutS: 180,
};

/** The seeded catalog of the embedded default (src/catalog/catalog-seed.ts): zone `local`, debian-12, small. */
export const SEEDED: CatalogRefs = {
  imageId: seededId('image', 'debian-12'),
  flavorId: seededId('flavor', 'small'),
  providerId: seededId('provider', 'local-simulator'),
  clusterId: seededId('cluster', 'local-simulator'),
};

export interface HcpHandle {
  hcp: HcpUnderTest;
  stop(): Promise<void>;
}

export const PROJECTS = Array.from({ length: 100 }, (_, i) => `p-${i}`);

export function createBody(): string {
  return JSON.stringify({
    name: 'bench-{n}',
    zone: 'local',
    image_id: SEEDED.imageId,
    flavor_id: SEEDED.flavorId,
    tags: { bench: 'yes' },
  });
}

/** What every scenario gets: sizes, how to start HCP and the baseline, and cleanup of what it started. */
export class BenchContext {
  private readonly cleanups: Array<() => Promise<unknown>> = [];
  readonly profiles: Record<string, ProfileSummary> = {};

  constructor(
    readonly sizes: Sizes,
    readonly runtime: Runtime,
    /** Set with --profile: HCP runs under --cpu-prof and each profile is summarised. */
    readonly profileDir: string | null,
  ) {}

  async database(): Promise<BenchDatabase> {
    const db = await createBenchDatabase();
    this.cleanups.push(() => db.drop());
    return db;
  }

  /** Starts HCP (with --profile: ready to profile load windows, see measure()); `stop` ends it. */
  async hcp(label: string, options: Omit<HcpOptions, 'runtime' | 'cpuProfDir'>): Promise<HcpHandle> {
    const cpuProfDir = this.profileDir ? path.join(this.profileDir, label) : undefined;
    const started = Date.now();
    const hcp = await HcpUnderTest.start({ ...options, runtime: this.runtime, ...(cpuProfDir ? { cpuProfDir } : {}) });
    log(`HCP (${label}) ready in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    let stopped = false;
    const stop = async () => {
      if (stopped) return;
      stopped = true;
      await hcp.stop();
    };
    this.cleanups.push(stop);
    return { hcp, stop };
  }

  /** The baseline server (bench/baseline/server.ts) on a database. */
  async baseline(databaseUrl: string): Promise<{ url: string; process: ManagedProcess; stop: () => Promise<void> }> {
    const port = await freePort();
    const child = ManagedProcess.spawnNode('baseline', this.script('bench/baseline/server.ts'), {
      DATABASE_URL: databaseUrl,
      PORT: String(port),
    });
    const url = `http://127.0.0.1:${port}`;
    const deadline = Date.now() + 30_000;
    for (;;) {
      if (!child.running) throw new Error(`baseline server exited:\n${child.logs}`);
      try {
        await fetch(`${url}/ping`);
        break;
      } catch {
        if (Date.now() > deadline) throw new Error(`baseline server did not start:\n${child.logs}`);
        await sleep(100);
      }
    }
    const stop = () => child.stop();
    this.cleanups.push(stop);
    return { url, process: child, stop };
  }

  /** A peer service (bench/peers/) in one of its forms, on a database of its own. */
  async peer(name: PeerName, databaseUrl: string): Promise<PeerHandle> {
    const started = Date.now();
    const peer = await startPeer(name, databaseUrl, this.script('bench/peers/emmett/server.ts'));
    log(`peer ${name} ready in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    this.cleanups.push(() => peer.stop());
    return peer;
  }

  /**
   * Runs one measured load against HCP; with --profile, HCP's CPU is profiled for exactly that window
   * and the summary is kept under `label`.
   */
  async measure<T>(hcp: HcpUnderTest, label: string, work: () => Promise<T>): Promise<T> {
    const { result, profile } = await hcp.profiled(work);
    if (profile) this.profiles[label] = profile;
    return result;
  }

  /** Arguments to node for one of the harness's child programs, compiled or through ts-node. */
  script(file: string): string[] {
    return scriptArgs(this.runtime, file);
  }

  /** Stops everything still running and drops every database, newest first. */
  async cleanup(): Promise<void> {
    for (const fn of this.cleanups.reverse()) await fn().catch((err: Error) => log(`cleanup: ${err.message}`));
    this.cleanups.length = 0;
  }
}
