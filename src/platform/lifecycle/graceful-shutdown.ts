import type { Server } from 'node:http';
import type { Logger } from '@nestjs/common';
import type { ServingState } from './serving-state';

export interface ShutdownStep {
  /** Says what the stop waits for, in the log line of an overrun. */
  name: string;
  run(): Promise<unknown>;
}

export interface GracefulShutdownOptions {
  server: Server;
  state: ServingState;
  graceMs: number;
  drainDelayMs: number;
  logger: Logger;
  /** What stops after the HTTP server, in order (Nest's background work, then the runtime). */
  steps: ShutdownStep[];
  exit?: (code: number) => void;
}

/**
 * SIGTERM and SIGINT stop the process in an order that loses nothing: readiness and every new request
 * answer 503 at once (draining), the listener closes after the drain delay, the requests being answered
 * finish and their connections close, then the steps run (the job worker gives its running jobs back,
 * projections stop), and the process exits 0. A hard timer ends it with exit code 1 after the grace
 * period whatever is still pending, so a deployment's stop never hangs; a second signal ends it at once.
 */
export function installGracefulShutdown(options: GracefulShutdownOptions): void {
  const onSignal = shutdownOnSignal(options);
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
}

/** What a signal does: the first one stops the process in order, a second one exits at once. */
export function shutdownOnSignal(options: GracefulShutdownOptions): (signal: NodeJS.Signals) => Promise<void> {
  let stopping = false;
  return async (signal) => {
    if (stopping) {
      options.logger.warn(`${signal} again while stopping: exiting now`);
      (options.exit ?? process.exit)(1);
      return;
    }
    stopping = true;
    await stop(signal, options);
  };
}

async function stop(signal: NodeJS.Signals, options: GracefulShutdownOptions): Promise<void> {
  const { server, state, graceMs, drainDelayMs, logger } = options;
  const exit = options.exit ?? process.exit;
  const started = Date.now();
  let pending = 'draining';
  state.drain();
  logger.log(`${signal}: draining; exiting within ${graceMs} ms`);
  const hardStop = setTimeout(() => {
    logger.error({
      msg: `stop overran its grace period of ${graceMs} ms while ${pending}; exiting anyway`,
      pending,
      requests_in_flight: state.requestsInFlight,
      resources: countOf(process.getActiveResourcesInfo()),
    });
    exit(1);
  }, graceMs);
  // The timer only bounds the stop: an orderly stop that finishes early must not wait for it.
  hardStop.unref();
  try {
    if (drainDelayMs > 0) await new Promise((resolve) => setTimeout(resolve, drainDelayMs).unref());
    pending = 'closing the listener';
    server.close();
    server.closeIdleConnections();
    pending = `answering the requests in flight`;
    await state.whenIdle();
    // Every request is answered: what is left is idle keep-alive connections opened meanwhile.
    server.closeAllConnections();
    for (const step of options.steps) {
      pending = step.name;
      await step.run();
    }
    logger.log(`stopped in ${Date.now() - started} ms`);
    clearTimeout(hardStop);
    exit(0);
  } catch (err) {
    logger.error({ msg: `stop failed while ${pending}`, err });
    clearTimeout(hardStop);
    exit(1);
  }
}

function countOf(resources: string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const r of resources) counts[r] = (counts[r] ?? 0) + 1;
  return counts;
}
