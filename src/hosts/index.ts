// The hosts context as other contexts see it.
export { HostsModule } from './hosts.module';
export { HostDirectory } from './host-directory';
export type { HostRecord } from './host.store';
export { HostAuthModule } from './internal/host-auth.module';
export { CurrentHost, HostGuard, type HostRequest } from './internal/host.guard';
export { AGENT_PROVIDER_TYPES } from './enrollment/enrollment.service';
export { parseStaticHostCredentials } from './credentials/static-host-credentials';
export { listenInternal, separatePorts } from './internal/internal-listener';
