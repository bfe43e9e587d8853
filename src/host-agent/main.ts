/**
 * The host agent: runs HCP's driver calls for VMs on this host on its local libvirt.
 *   npm run agent -- --hcp <url> --token <bootstrap token> [options]   (npm run agent -- --help)
 *   node dist/src/host-agent/main.js ...                                 (after npm run build)
 * Enrolls once (the credential is kept in the state dir), then heartbeats, claims calls, runs them,
 * renews their leases and reports their outcomes until SIGTERM/SIGINT. Exit codes: exit-codes.ts.
 */
import { streamLog } from './agent-log';
import { EXIT_CODES } from './exit-codes';
import { libvirtHostDriver } from './libvirt-host-driver';
import { runAgent } from './run-agent';

const log = streamLog();
const stopper = new AbortController();
let signals = 0;
const onSignal = (signal: NodeJS.Signals) => {
  signals += 1;
  if (signals > 1) {
    log.warn(`${signal} again: exiting now; running calls are left to their leases`);
    process.exit(EXIT_CODES.ok);
  }
  log.info(`${signal} received`);
  stopper.abort();
};
process.on('SIGTERM', onSignal);
process.on('SIGINT', onSignal);
// A loop's bug must not take the agent down: every loop logs and backs off on its own, this is the net.
process.on('unhandledRejection', (reason) => log.error(`unhandled rejection: ${String(reason)}`));

runAgent(process.argv.slice(2), process.env, { log, driverFor: libvirtHostDriver, stop: stopper.signal }).then(
  (code) => process.exit(code),
  (err: unknown) => {
    log.error(`unexpected failure: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    process.exit(EXIT_CODES.unexpected);
  },
);
