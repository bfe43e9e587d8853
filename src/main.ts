import 'reflect-metadata';
import { Logger as NestLogger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Logger } from 'nestjs-pino';
import { SimulatorFaults } from '@hcp/providers';
import { AppModule } from './app.module';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { requestId } from './http/request/request-id';
import { requestLogging } from './http/request/request-logging';
import { requestLoggerOptions } from './http/request/logger-options';
import { edgeHook } from './http/edge/edge-step';
import { acceptJsonBodies } from './http/validation/json-body';
import { requireJsonBody } from './http/validation/media-type';
import { frameworkErrors } from './http/errors/framework-errors';
import { inputGuard } from './http/validation/input-guard';
import { httpMetrics } from './platform/observability/http-metrics.hook';
import { HcpMetrics } from './platform/observability/hcp-metrics';
import { securityHeaders } from './http/security-headers';
import { HcpFastifyAdapter } from './http/hcp-fastify-adapter';
import { strictValidationPipe } from './http/validation/validation-pipe';
import { LIMITS } from './http/validation/limits';
import { ConfigError, HcpConfig, loadConfig } from './config/hcp-config';
import { openRuntime } from './platform/runtime/hcp-runtime';
import { seedEmbeddedDefault } from './catalog';
import { OpsCatalogCommands, OpsCatalogQueries } from './ops';
import { publishOpenApi } from './http/openapi';
import { serveWebconsoleAssets } from './console';
import { listenInternal, parseStaticHostCredentials, separatePorts } from './hosts';
import { availabilityGate } from './http/availability/availability-gate';
import { SchemaGate } from './http/availability/schema-gate';
import { CrashGuard } from './platform/lifecycle/crash-guard';
import { installGracefulShutdown } from './platform/lifecycle/graceful-shutdown';
import { servingState } from './platform/lifecycle/serving-state';

/** Validates settings that belong to other modules, so a bad value stops the start like any other. */
const simulatorFaultsCheck = (c: HcpConfig): string | null => {
  try {
    SimulatorFaults.parse(c.simulator.faults);
    return null;
  } catch (err) {
    return `HCP_SIMULATOR_FAULTS: ${(err as Error).message}`;
  }
};

const staticHostCredentialsCheck = (c: HcpConfig): string | null => {
  try {
    parseStaticHostCredentials(c.hosts.staticCredentials);
    return null;
  } catch (err) {
    return `HCP_STATIC_HOST_CREDENTIALS: ${(err as Error).message}`;
  }
};

// Before anything opens: an error no code handles is logged and survived, during the start too.
const crashGuard = new CrashGuard(new NestLogger('process')).install();

async function main(): Promise<void> {
  let config: HcpConfig;
  try {
    config = loadConfig(process.env, [simulatorFaultsCheck, staticHostCredentialsCheck]);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`HCP cannot start: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  const runtime = await openRuntime(config).catch((err: unknown) => {
    // A secrets setting that is wrong or missing is a configuration error like any other.
    if (
      (err as { name?: string; code?: string }).name === 'SecretsError' &&
      (err as { code?: string }).code === 'CONFIG'
    ) {
      process.stderr.write(`HCP cannot start: invalid configuration:\n  - ${(err as Error).message}\n`);
      process.exit(2);
    }
    throw err;
  });
  const headers = securityHeaders();
  const adapter = new HcpFastifyAdapter(frameworkErrors([requestId, headers], new NestLogger('http')));
  const app = await NestFactory.create<NestFastifyApplication>(AppModule.forRoot(runtime), adapter, {
    bufferLogs: true,
    bodyParser: false,
  });
  app.useLogger(app.get(Logger));
  const metrics = app.get(HcpMetrics);
  crashGuard.countWith(metrics.unhandledErrors);
  const { internalPort } = config.hosts;
  const fastify = app.getHttpAdapter().getInstance();
  const availability = availabilityGate(servingState, app.get(SchemaGate), metrics);
  // What every request passes before its route's guards, in this order; then its logger.
  fastify.addHook(
    'onRequest',
    edgeHook(
      requestId,
      ...(internalPort === null ? [] : [separatePorts(internalPort)]),
      availability.gate,
      headers,
      requireJsonBody,
    ),
  );
  // Where nestjs-pino's own middleware ran (see loggerOptions): after the checks above, before the routes.
  const completionLines = requestLogging(requestLoggerOptions(config.logLevel));
  if (completionLines) fastify.addHook('onRequest', completionLines);
  acceptJsonBodies(fastify, LIMITS.bodyBytes);
  fastify.addHook('preValidation', edgeHook(inputGuard));
  fastify.addHook('onResponse', httpMetrics(metrics));
  fastify.addHook('onResponse', availability.counted);
  await serveWebconsoleAssets(app);
  app.useGlobalPipes(strictValidationPipe());
  publishOpenApi(app);
  await app.init();
  if (config.seedCatalog) await seedEmbeddedDefault(app.get(OpsCatalogCommands), app.get(OpsCatalogQueries));
  await app.listen(config.port, config.host);
  const internalServer =
    internalPort === null
      ? null
      : await listenInternal((req, res) => fastify.routing(req, res), internalPort, config.host);
  installGracefulShutdown({
    server: app.getHttpServer(),
    state: servingState,
    graceMs: config.shutdown.graceMs,
    drainDelayMs: config.shutdown.drainDelayMs,
    logger: new NestLogger('shutdown'),
    // The runtime (database, embedded PostgreSQL) closes only after Nest has stopped its background work.
    steps: [
      {
        name: 'closing the internal listener',
        run: async () => {
          internalServer?.close();
          internalServer?.closeAllConnections();
        },
      },
      { name: 'stopping the job worker, projections and timers', run: () => app.close() },
      { name: 'closing the database and event store', run: () => runtime.close() },
    ],
  });
  new NestLogger('hcp').log(
    `HCP listening on http://${config.host}:${config.port}${internalPort === null ? '' : ` (internal router on port ${internalPort})`} (roles: ${config.roles.join(', ')})`,
  );
}

main().catch((err) => {
  process.stderr.write(`HCP failed to start: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
