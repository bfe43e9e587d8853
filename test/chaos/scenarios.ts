import { randomUUID } from 'node:crypto';
import { sleep } from './chaos-postgres';
import type { ChaosPostgres } from './chaos-postgres';
import type { HcpFleet } from './hcp-fleet';
import type { ProviderChaos } from './provider-chaos';
import type { RecoveryClock } from './recovery';

/** What a scenario's fault injector gets to work with while the stream runs. */
export interface ChaosContext {
  fleet: HcpFleet;
  postgres: ChaosPostgres;
  database: string;
  recovery: RecoveryClock;
  /** SIGTERM exit times (ms), or null when a process had to be SIGKILLed after the limit. */
  shutdowns: Array<number | null>;
  /** Stops when the stream's time is up. */
  until: number;
  long: boolean;
  log(message: string): void;
  notes: string[];
  /** The provider's chaos (faults, changes behind HCP's back), for scenarios that ask for it. */
  provider?: ProviderChaos;
}

export interface Scenario {
  id: string;
  title: string;
  instances: number;
  /** Settings of this scenario's HCP processes on top of the suite's. */
  env?: Record<string, string>;
  /** Prepares VMs of a project of their own that the injector changes behind HCP's back. */
  provider?: { driftVms: number };
  inject(ctx: ChaosContext): Promise<void>;
}

const SHUTDOWN_LIMIT_MS = 90_000;

/** Waits a random time in [minMs, maxMs], or less if the stream ends first; false when it ended. */
async function pause(ctx: ChaosContext, minMs: number, maxMs: number): Promise<boolean> {
  const ms = minMs + Math.random() * (maxMs - minMs);
  const left = ctx.until - Date.now();
  await sleep(Math.max(0, Math.min(ms, left)));
  return Date.now() < ctx.until - 1_000;
}

export const SCENARIOS: Scenario[] = [
  {
    id: 'hcp-sigkill',
    title: 'SIGKILL of HCP at random moments, then restart',
    instances: 1,
    async inject(ctx) {
      while (await pause(ctx, 3_000, ctx.long ? 10_000 : 6_000)) {
        const slot = ctx.fleet.slots[0]!;
        ctx.log('SIGKILL HCP');
        await slot.kill();
        // The fault ends when the supervisor starts HCP again: the recovery time includes its boot.
        ctx.recovery.faultEnded('HCP restarted after SIGKILL');
        await slot.start();
      }
    },
  },
  {
    id: 'postgres-kill',
    title: 'PostgreSQL postmaster SIGKILLed, restarted after a few seconds',
    instances: 1,
    async inject(ctx) {
      while (await pause(ctx, 4_000, ctx.long ? 15_000 : 8_000)) {
        ctx.log('SIGKILL postmaster');
        await ctx.postgres.kill();
        await sleep(1_000 + Math.random() * 3_000);
        await ctx.postgres.start();
        ctx.log('postgres back');
        ctx.recovery.faultEnded('PostgreSQL restarted');
      }
    },
  },
  {
    id: 'pg-terminate',
    title: 'pg_terminate_backend of random HCP sessions',
    instances: 1,
    async inject(ctx) {
      let killed = 0;
      while (await pause(ctx, 1_000, 3_000)) {
        const rows = await ctx.postgres
          .query<{ pid: number; application_name: string }>(
            `SELECT pid, application_name, pg_terminate_backend(pid) AS done
               FROM (SELECT pid, application_name FROM pg_stat_activity
                      WHERE datname = $1 AND application_name LIKE 'hcp%' AND pid <> pg_backend_pid()
                      ORDER BY random() LIMIT $2) AS chosen`,
            [ctx.database, 1 + Math.floor(Math.random() * 3)],
          )
          .catch((error: unknown) => {
            ctx.notes.push(`terminate query failed: ${String(error)}`);
            return [];
          });
        killed += rows.length;
        ctx.recovery.faultEnded(`${rows.length} session(s) terminated`);
      }
      ctx.notes.push(`${killed} HCP sessions terminated`);
    },
  },
  {
    id: 'sigterm',
    title: 'SIGTERM of one of two HCP processes under load, then restart',
    instances: 2,
    async inject(ctx) {
      let turn = 0;
      while (await pause(ctx, 3_000, ctx.long ? 12_000 : 6_000)) {
        const slot = ctx.fleet.slots[turn++ % ctx.fleet.slots.length]!;
        ctx.log(`SIGTERM HCP ${slot.index}`);
        const ms = await slot.terminate(SHUTDOWN_LIMIT_MS);
        ctx.shutdowns.push(ms ?? null);
        ctx.log(ms === undefined ? 'did not exit, SIGKILLed' : `exited after ${ms} ms`);
        ctx.recovery.faultEnded('HCP restarted after SIGTERM');
        await slot.start();
      }
    },
  },
  {
    id: 'three-instances',
    title: 'three HCP processes on one database, one SIGKILLed',
    instances: 3,
    async inject(ctx) {
      while (await pause(ctx, 4_000, ctx.long ? 20_000 : 10_000)) {
        const slot = ctx.fleet.slots[Math.floor(Math.random() * ctx.fleet.slots.length)]!;
        ctx.log(`SIGKILL HCP ${slot.index} of 3`);
        await slot.kill();
        ctx.recovery.faultEnded('one of three HCP processes SIGKILLed');
        await sleep(3_000);
        await slot.start();
      }
    },
  },
  {
    id: 'poison-event',
    title: 'a VmCreateRequested with a malformed body appended straight into the event store',
    instances: 1,
    async inject(ctx) {
      const poisons = ctx.long ? 3 : 1;
      for (let i = 0; i < poisons; i++) {
        if (!(await pause(ctx, 4_000, 8_000))) break;
        const vmId = randomUUID();
        // Straight into the table: nothing in HCP gets a chance to validate it, as with a bug or a bad import.
        await ctx.postgres.query(
          `INSERT INTO hcp_events (stream_id, revision, event_id, type, data, metadata)
           VALUES ($1, 0, $2, 'VmCreateRequested', $3::jsonb, '{}'::jsonb)`,
          [`vm-${vmId}`, randomUUID(), JSON.stringify({ name: 42, zone: ['pve'], flavor_id: null })],
          ctx.database,
        );
        ctx.log(`poison event appended on vm-${vmId}`);
        ctx.notes.push(`poison VmCreateRequested on vm-${vmId}`);
        ctx.recovery.faultEnded('poison event appended');
      }
    },
  },
  {
    id: 'provider-chaos',
    title: "Proxmox faults at random and VMs stopped, started and deleted behind HCP's back",
    instances: 2,
    // Reconcile often, and let it remove what failed creates left when their own cleanup failed too.
    env: { HCP_RECONCILE_INTERVAL_MS: '2000', HCP_ORPHAN_POLICY: 'destroy' },
    provider: { driftVms: 4 },
    async inject(ctx) {
      const provider = ctx.provider!;
      while (await pause(ctx, 800, 2_500)) {
        const action =
          Math.random() < 0.6 ? await provider.injectFault() : await provider.changeBehindBack().catch(String);
        if (action) ctx.log(action);
      }
      ctx.notes.push(
        `${provider.figures.faults_injected} provider faults, ${provider.figures.changes_behind_back} changes behind HCP's back`,
      );
    },
  },
];
