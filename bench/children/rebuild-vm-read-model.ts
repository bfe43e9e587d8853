/**
 * Rebuilds the VM read model with HCP's own code: the ProjectionRunner (advisory lock, checkpointed
 * subscription, micro-batches) and the vm-read-model projection, on the PostgreSQL event store, from
 * position zero (a fresh checkpoint), exactly as the projections role runs it. Run by bench/run.ts as
 * a process of its own so its memory and CPU are its own.
 *
 *   node scripts/ts-run.js bench/children/rebuild-vm-read-model.ts migrate <database url>
 *   node scripts/ts-run.js bench/children/rebuild-vm-read-model.ts rebuild <database url> <last position>
 *
 * `rebuild` prints {"seconds", "rssPeakMb"} once the checkpoint has reached the last position.
 */
import { readFileSync } from 'node:fs';
import { Pool } from 'pg';
// Relative imports, so the compiled copy (bench/.build/bench/children) runs the compiled HCP code.
import { createHcpUpcasters } from '../../libs/domain/src';
import { DomainEventCodec, PostgresEventStore } from '../../libs/eventstore/src';
import { ProjectionRunner } from '../../projections/runner/projection-runner';
import { vmReadModelProjection } from '../../projections/vm-read-model/vm-read-model.projection';
import { createDataSource } from '../../src/platform/persistence/data-source';
import { migrate } from '../../src/platform/persistence/migrate';

const hwmMb = (): number =>
  Number(/^VmHWM:\s+(\d+) kB/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? 0) / 1024;

async function main(): Promise<void> {
  const [mode, url, lastText] = process.argv.slice(2);
  const dataSource = createDataSource(url!, { applicationName: 'hcp-bench-rebuild' });
  await dataSource.initialize();
  try {
    if (mode === 'migrate') {
      await migrate(dataSource);
      return;
    }
    const last = BigInt(lastText!);
    const pool = new Pool({ connectionString: url, max: 20, application_name: 'hcp-bench-rebuild-events' });
    const store = new PostgresEventStore({ pool });
    const runner = new ProjectionRunner(
      dataSource,
      store,
      new DomainEventCodec(createHcpUpcasters()),
      vmReadModelProjection(),
    );
    const started = process.hrtime.bigint();
    runner.start();
    for (;;) {
      const rows = await dataSource.query(
        `SELECT position::text AS p FROM projection_checkpoints WHERE name = 'vm-read-model'`,
      );
      if (rows.length && BigInt(rows[0].p) >= last) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    await runner.stop();
    await store.close();
    await pool.end();
    process.stdout.write(`${JSON.stringify({ seconds, rssPeakMb: hwmMb() })}\n`);
  } finally {
    await dataSource.destroy();
  }
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack}\n`);
  process.exit(1);
});
