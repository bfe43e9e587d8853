import { Inject, Injectable } from '@nestjs/common';
import type { HcpConfig } from '../config/hcp-config';
import { HCP_CONFIG } from '../platform/tokens';
import { HostRecord, HostStore } from './host.store';

/** The hosts other contexts may place work on: active, online (recent heartbeat), with a capacity. */
@Injectable()
export class HostDirectory {
  constructor(
    private readonly hosts: HostStore,
    @Inject(HCP_CONFIG) private readonly config: HcpConfig,
  ) {}

  liveHosts(clusterId: string): Promise<HostRecord[]> {
    return this.hosts.live(clusterId, this.config.hosts.heartbeatTimeoutMs);
  }
}
