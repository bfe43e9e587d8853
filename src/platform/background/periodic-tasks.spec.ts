import type { HcpConfig } from '../../config/hcp-config';
import { PeriodicTasks } from './periodic-tasks';

describe('PeriodicTasks', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  function tasksWithOneSlowRun() {
    const tasks = new PeriodicTasks({ roles: ['api'] } as HcpConfig);
    const finishers: Array<() => void> = [];
    const run = jest.fn(() => new Promise<void>((resolve) => finishers.push(resolve)));
    tasks.register({ role: 'api', name: 'sweeping', intervalMs: 1000, run });
    tasks.onApplicationBootstrap();
    return { tasks, run, finishers };
  }

  it('does not start a run of a task while its previous run is still going', async () => {
    const { run, finishers } = tasksWithOneSlowRun();
    await jest.advanceTimersByTimeAsync(3500);
    expect(run).toHaveBeenCalledTimes(1);
    finishers[0]();
    await jest.advanceTimersByTimeAsync(1000);
    expect(run).toHaveBeenCalledTimes(2);
  });

  it('starts no run once the application stops, and waits for the run in flight', async () => {
    const { tasks, run, finishers } = tasksWithOneSlowRun();
    await jest.advanceTimersByTimeAsync(1000);
    tasks.onModuleDestroy();
    let stopped = false;
    const stopping = tasks.beforeApplicationShutdown().then(() => (stopped = true));
    await jest.advanceTimersByTimeAsync(100);
    expect(stopped).toBe(false);
    finishers[0]();
    await stopping;
    await jest.advanceTimersByTimeAsync(5000);
    expect(run).toHaveBeenCalledTimes(1);
  });

  it('leaves a run that does not finish behind after a bounded wait', async () => {
    const { tasks } = tasksWithOneSlowRun();
    await jest.advanceTimersByTimeAsync(1000);
    tasks.onModuleDestroy();
    const stopping = tasks.beforeApplicationShutdown();
    await jest.advanceTimersByTimeAsync(10_000);
    await expect(stopping).resolves.toBeUndefined();
  });
});
