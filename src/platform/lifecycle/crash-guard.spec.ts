import type { Logger } from '@nestjs/common';
import { CrashGuard } from './crash-guard';

describe('CrashGuard', () => {
  let guard: CrashGuard;
  const logged: unknown[] = [];
  const logger = { error: (entry: unknown) => logged.push(entry) } as unknown as Logger;

  beforeEach(() => {
    logged.length = 0;
    guard = new CrashGuard(logger).install();
  });

  afterEach(() => guard.uninstall());

  it('logs an unhandled rejection with its error and counts it', () => {
    const counted: string[] = [];
    guard.countWith({ inc: ({ kind }) => counted.push(kind) });
    const err = new Error('nobody awaited me');
    process.emit('unhandledRejection', err, Promise.resolve());
    expect(counted).toEqual(['unhandled_rejection']);
    expect(logged).toEqual([expect.objectContaining({ kind: 'unhandled_rejection', err })]);
  });

  it('counts the errors it survived before the metrics existed once they do', () => {
    process.emit('uncaughtException', new Error('thrown in a callback'));
    process.emit('unhandledRejection', 'a reason', Promise.resolve());
    const counted: string[] = [];
    guard.countWith({ inc: ({ kind }) => counted.push(kind) });
    expect(counted.sort()).toEqual(['uncaught_exception', 'unhandled_rejection']);
  });
});
