import type { Logger } from '@nestjs/common';
import type { Server } from 'node:http';
import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import { GracefulShutdownOptions, shutdownOnSignal } from './graceful-shutdown';
import { ServingState } from './serving-state';

function world(overrides: Partial<GracefulShutdownOptions> = {}) {
  const calls: string[] = [];
  const logs: unknown[] = [];
  let exited: (code: number) => void = () => undefined;
  const exit = new Promise<number>((resolve) => (exited = resolve));
  const state = new ServingState();
  const server = {
    close: () => calls.push('listener closed'),
    closeIdleConnections: () => calls.push('idle connections closed'),
    closeAllConnections: () => calls.push('all connections closed'),
  } as unknown as Server;
  const options: GracefulShutdownOptions = {
    server,
    state,
    graceMs: 60_000,
    drainDelayMs: 0,
    logger: { log: () => undefined, warn: () => undefined, error: (e: unknown) => logs.push(e) } as unknown as Logger,
    steps: [
      { name: 'nest', run: async () => calls.push('nest closed') },
      { name: 'runtime', run: async () => calls.push('runtime closed') },
    ],
    exit: (code) => {
      calls.push(`exit ${code}`);
      exited(code);
    },
    ...overrides,
  };
  return { calls, logs, exit, state, options };
}

function inFlight(state: ServingState) {
  const res = Object.assign(new EventEmitter(), { headersSent: false, setHeader: () => undefined });
  state.track(res as unknown as ServerResponse);
  return res;
}

describe('graceful shutdown', () => {
  it('drains, closes the listener, waits for the requests in flight, then closes Nest and the runtime and exits 0', async () => {
    const { calls, exit, state, options } = world();
    const request = inFlight(state);
    void shutdownOnSignal(options)('SIGTERM');
    await new Promise((resolve) => setImmediate(resolve));
    expect(state.draining).toBe(true);
    expect(calls).toEqual(['listener closed', 'idle connections closed']);

    request.emit('finish');
    expect(await exit).toBe(0);
    expect(calls).toEqual([
      'listener closed',
      'idle connections closed',
      'all connections closed',
      'nest closed',
      'runtime closed',
      'exit 0',
    ]);
  });

  it('exits 1 at the end of the grace period when a step never finishes, naming what it waited for', async () => {
    const { calls, logs, exit, options } = world({
      graceMs: 20,
      steps: [{ name: 'stopping the job worker', run: () => new Promise(() => undefined) }],
    });
    void shutdownOnSignal(options)('SIGTERM');
    expect(await exit).toBe(1);
    expect(calls).not.toContain('exit 0');
    expect(logs).toEqual([expect.objectContaining({ pending: 'stopping the job worker' })]);
  });

  it('exits 1 when a step fails', async () => {
    const { exit, options } = world({
      steps: [{ name: 'runtime', run: () => Promise.reject(new Error('cannot close')) }],
    });
    void shutdownOnSignal(options)('SIGINT');
    expect(await exit).toBe(1);
  });

  it('exits at once on a second signal', async () => {
    const { calls, exit, state, options } = world();
    inFlight(state);
    const onSignal = shutdownOnSignal(options);
    void onSignal('SIGTERM');
    void onSignal('SIGTERM');
    expect(await exit).toBe(1);
    expect(calls).not.toContain('nest closed');
  });
});
