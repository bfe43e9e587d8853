import { Controller, Get, Inject, Res } from '@nestjs/common';
import type { HttpReply as Response } from '../../http/edge/http-types';

import { HCP_RUNTIME } from '../tokens';
import { schemaStatus } from '../persistence/data-source';
import { HcpRuntime } from '../runtime/hcp-runtime';
import { servingState } from '../lifecycle/serving-state';

type Check = { status: 'ok' } | { status: 'failing'; reason: string };

/**
 * Liveness says the process runs; readiness says it can serve: database, event store and schema, and
 * not stopping (`draining`).
 */
@Controller('health')
export class HealthController {
  constructor(@Inject(HCP_RUNTIME) private readonly runtime: HcpRuntime) {}

  @Get('live')
  live() {
    return { status: 'ok' };
  }

  @Get('ready')
  async ready(@Res({ passthrough: true }) res: Response) {
    // A stopping process is taken out of rotation at once, whatever its dependencies say.
    if (servingState.draining) {
      res.status(503);
      return { status: 'draining' };
    }
    const [database, eventStore, schema] = await Promise.all([this.database(), this.eventStore(), this.schema()]);
    const checks = { database, event_store: eventStore, schema };
    const ok = Object.values(checks).every((c) => c.status === 'ok');
    res.status(ok ? 200 : 503);
    return { status: ok ? 'ok' : 'failing', checks };
  }

  private async database(): Promise<Check> {
    return probe(async () => {
      await this.runtime.dataSource.query('SELECT 1');
    }, 'database unreachable');
  }

  private async eventStore(): Promise<Check> {
    return probe(async () => {
      await this.runtime.eventStore.headPosition();
    }, 'event store unreachable');
  }

  private async schema(): Promise<Check> {
    try {
      const status = await schemaStatus(this.runtime.dataSource);
      return status.ok
        ? { status: 'ok' }
        : { status: 'failing', reason: `${status.reason}: ${status.migrations.join(', ')}` };
    } catch {
      return { status: 'failing', reason: 'schema version unknown (database unreachable)' };
    }
  }
}

/** Runs a check with a time bound; the reason never carries connection strings or driver messages. */
async function probe(check: () => Promise<void>, reason: string, timeoutMs = 2000): Promise<Check> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      check(),
      new Promise((_, reject) => (timer = setTimeout(() => reject(new Error('timeout')), timeoutMs))),
    ]);
    return { status: 'ok' };
  } catch {
    return { status: 'failing', reason };
  } finally {
    clearTimeout(timer);
  }
}
