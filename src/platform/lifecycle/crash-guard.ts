import type { Logger } from '@nestjs/common';

type Counter = { inc(labels: { kind: 'unhandled_rejection' | 'uncaught_exception' }): void };

/**
 * Keeps the process serving when an error escapes every handler (a promise nobody awaited, an 'error'
 * event nobody listens to, a throw in a callback). Ending the process would turn one bug in one request
 * into an outage of all of them, and lose the jobs in flight; the error is logged with its stack and
 * counted in hcp_unhandled_errors_total instead, for someone to fix. Installed before anything opens,
 * so it guards the start too; the counter is attached once the metrics exist.
 */
export class CrashGuard {
  private counter: Counter | null = null;
  private pending = { unhandled_rejection: 0, uncaught_exception: 0 };

  constructor(private readonly logger: Logger) {}

  private readonly onRejection = (reason: unknown) => this.survive('unhandled_rejection', reason);
  private readonly onException = (err: Error) => this.survive('uncaught_exception', err);

  install(): this {
    process.on('unhandledRejection', this.onRejection);
    process.on('uncaughtException', this.onException);
    return this;
  }

  uninstall(): void {
    process.off('unhandledRejection', this.onRejection);
    process.off('uncaughtException', this.onException);
  }

  countWith(counter: Counter): void {
    this.counter = counter;
    for (const kind of ['unhandled_rejection', 'uncaught_exception'] as const) {
      for (; this.pending[kind] > 0; this.pending[kind]--) counter.inc({ kind });
    }
  }

  private survive(kind: 'unhandled_rejection' | 'uncaught_exception', err: unknown): void {
    this.logger.error({ msg: `${kind.replace('_', ' ')} (survived; this is a bug)`, kind, err });
    if (this.counter) this.counter.inc({ kind });
    else this.pending[kind]++;
  }
}
