import { Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { HostCredentials } from '../credentials/host-credentials';
import { HostStore } from '../host.store';
import { HostGuard } from './host.guard';
import { InternalRateLimits } from './internal-rate-limits';

/**
 * Authentication of the internal router: HostGuard and what it needs. Its own module so the host-calls
 * module (imported by HostsModule) can import it too without a cycle. HostGuard is registered as an app
 * guard: every internal route is guarded whether or not its controller names it.
 */
@Module({
  providers: [HostStore, HostCredentials, InternalRateLimits, HostGuard, { provide: APP_GUARD, useClass: HostGuard }],
  exports: [HostStore, HostCredentials, InternalRateLimits, HostGuard],
})
export class HostAuthModule {}
