import { Logger } from '@nestjs/common';
import { Pool, PoolClient } from 'pg';
import { JOB_QUEUE_CHANNEL } from './job-queue';

/**
 * Wakes idle workers as soon as the dispatcher enqueues jobs (PostgreSQL LISTEN/NOTIFY), so a job does
 * not wait for the next poll. Polling stays the safety net: a lost connection only costs latency.
 */
export class JobQueueListener {
  private readonly logger = new Logger('job-queue-listener');
  private client: PoolClient | null = null;
  private stopped = false;
  private retry: NodeJS.Timeout | null = null;

  constructor(
    private readonly pool: Pool,
    private readonly onJobsDue: () => void,
  ) {}

  async start(): Promise<void> {
    try {
      const client = await this.pool.connect();
      client.on('notification', () => this.onJobsDue());
      client.on('error', (err) => this.reconnect(err));
      await client.query(`LISTEN ${JOB_QUEUE_CHANNEL}`);
      this.client = client;
    } catch (err) {
      this.reconnect(err);
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.retry) clearTimeout(this.retry);
    const client = this.client;
    this.client = null;
    if (client) {
      await client.query(`UNLISTEN ${JOB_QUEUE_CHANNEL}`).catch(() => undefined);
      client.release();
    }
  }

  private reconnect(err: unknown): void {
    if (this.stopped) return;
    this.logger.warn(`listening for due jobs failed, retrying: ${(err as Error).message}`);
    this.client?.release(true);
    this.client = null;
    this.retry = setTimeout(() => void this.start(), 1000);
    this.retry.unref();
  }
}
