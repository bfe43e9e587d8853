import { Module } from '@nestjs/common';

/**
 * Driver calls for host agents: the queue of calls per host, the internal routes agents claim, renew and
 * report them on, and the HostAgentDriver that HCP's jobs and loops use for agent clusters.
 */
@Module({})
export class HostCallsModule {}
