import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import cluster from 'node:cluster';
import * as path from 'node:path';
import { ConfigError, HcpConfig, loadConfig } from '../config/hcp-config';
import { openSharedRuntime } from '../platform/runtime/shared-runtime';
import { childSpecs, schedulingPolicy } from './child-specs';
import { ProcessSupervisor } from './process-supervisor';

/**
 * `npm start`. Without HCP_ROLES it uses the machine: the data folder's PostgreSQL, the schema and the
 * keys are opened once here, then HCP_API_PROCESSES API processes share PORT (node:cluster) and one more
 * runs the job worker and the projections; children that die are started again. With HCP_ROLES set (a
 * deployment: one role per process) or HCP_API_PROCESSES=0 it is main.ts in this very process.
 */
const singleProcess = Boolean(process.env.HCP_ROLES?.trim()) || process.env.HCP_API_PROCESSES?.trim() === '0';

if (singleProcess) {
  require('../main');
} else {
  launch().catch((err) => {
    process.stderr.write(`HCP failed to start: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  });
}

async function launch(): Promise<void> {
  const logger = new Logger('launcher');
  let config: HcpConfig;
  try {
    config = loadConfig(process.env);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`HCP cannot start: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  const shared = await openSharedRuntime(config);
  const specs = childSpecs(config, { shared: shared.env, connectionLimit: shared.connectionLimit, env: process.env });
  cluster.schedulingPolicy = schedulingPolicy(specs.api.length, process.env);
  cluster.setupPrimary(childEntry());
  let exitCode = 0;
  let finishing: Promise<void> | null = null;
  const finish = (code: number): Promise<void> => {
    exitCode = Math.max(exitCode, code);
    finishing ??= (async () => {
      await supervisor.stop();
      await shared.close().catch((err) => logger.warn(`stopping the embedded PostgreSQL: ${(err as Error).message}`));
      logger.log(`stopped (exit ${exitCode})`);
      process.exit(exitCode);
    })();
    return finishing;
  };
  const supervisor = new ProcessSupervisor(
    // The children drain within their own grace period; a little more before they are killed.
    { logger, stopTimeoutMs: config.shutdown.graceMs + 5000 },
    (reason) => {
      logger.error(reason);
      void finish(1);
    },
  );
  for (const signal of ['SIGTERM', 'SIGINT'] as const)
    process.on(signal, () => {
      logger.log(`${signal}: stopping every child`);
      void finish(0);
    });

  try {
    // The worker's process seeds the catalog before it listens: the API starts once there is one.
    await supervisor.start(specs.background);
    await Promise.all(specs.api.map((spec) => supervisor.start(spec)));
  } catch (err) {
    // A child that kept failing at start: the launcher is already stopping the rest and the database.
    if (finishing) return finishing;
    throw err;
  }
  logger.log(
    `HCP listening on http://${config.host}:${config.port}: ${specs.api.length} API process(es), one for the worker and projections (${supervisor
      .pids()
      .map((p) => `${p.name} ${p.pid}`)
      .join(', ')})`,
  );
}

/** The children run child.ts next to this file: compiled, or through ts-run when this runs as TypeScript. */
function childEntry(): { exec: string; args: string[] } {
  const extension = path.extname(__filename);
  const child = path.join(__dirname, `child${extension}`);
  if (extension !== '.ts') return { exec: child, args: [] };
  return { exec: path.join(__dirname, '..', '..', 'scripts', 'ts-run.js'), args: [child] };
}
