import { DynamicModule, Module, OnModuleInit, Type } from '@nestjs/common';
import { APP_FILTER, APP_GUARD } from '@nestjs/core';
import { PassportModule } from '@nestjs/passport';
import { BearerTokenStrategy } from '@hcp/auth';
import { PeriodicTasks } from '../platform/background/periodic-tasks';
import { AccessGuard } from './auth/access.guard';
import { SchemaGate } from './availability/schema-gate';
import { BreakGlassRecorder } from './auth/break-glass.recorder';
import { HcpExceptionFilter } from './errors/hcp-exception.filter';
import { REFUSAL_WINDOW_MS, RefusalLedger } from './errors/refusal-ledger';
import { IdempotencyStore } from './idempotency/idempotency-store';
import { RateLimitGuard } from './rate-limit/rate-limit.guard';
import { RequestRecorder } from './request/request-recorder';
import { bindRequestInterceptors } from './routes/request-interceptors';

const IDEMPOTENCY_PURGE_MS = 10 * 60_000;

/**
 * What every route shares, in one place no context repeats: who is calling and may they (bearer token,
 * route policy, break-glass), how often, the error envelope, the request's audit record and
 * idempotency. Contexts declare routes; these apply to all of them. The audit and idempotency
 * interceptors are bound per route by routes/request-interceptors.ts, so this module is global: each
 * context's module instantiates them from the stores exported here.
 */
@Module({})
export class HttpModule implements OnModuleInit {
  constructor(
    private readonly idempotency: IdempotencyStore,
    private readonly tasks: PeriodicTasks,
    private readonly refusals: RefusalLedger,
  ) {}

  /** `controllers`: every controller of the application, whose routes get their interceptors here. */
  static forRoot(controllers: readonly Type[]): DynamicModule {
    bindRequestInterceptors(controllers);
    return {
      module: HttpModule,
      global: true,
      imports: [PassportModule],
      providers: [
        BearerTokenStrategy,
        BreakGlassRecorder,
        RequestRecorder,
        IdempotencyStore,
        RefusalLedger,
        SchemaGate,
        // Guards run in this order: who is calling and may they, then how often.
        { provide: APP_GUARD, useClass: AccessGuard },
        { provide: APP_GUARD, useClass: RateLimitGuard },
        { provide: APP_FILTER, useClass: HcpExceptionFilter },
      ],
      exports: [RequestRecorder, IdempotencyStore],
    };
  }

  onModuleInit(): void {
    // Every API process purges; the DELETE is idempotent, so running it in several is harmless.
    this.tasks.register({
      role: 'api',
      name: 'purging idempotency keys',
      intervalMs: IDEMPOTENCY_PURGE_MS,
      run: () => this.idempotency.purgeExpired(),
    });
    // Per process, as the budget is: each API process writes the summaries of what it counted.
    this.tasks.register({
      role: 'api',
      name: 'recording suppressed refusals',
      intervalMs: REFUSAL_WINDOW_MS,
      run: () => this.refusals.writeSummaries(),
    });
  }
}
