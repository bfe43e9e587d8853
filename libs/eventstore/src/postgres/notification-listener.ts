import type { Notification, Pool, PoolClient } from 'pg';
import { decodeCategories } from './stream-categories';

/** A subscription's wake-up; `categories` are those of the committed streams, null when unknown. */
export type Waker = (categories: string[] | null) => void;

const FIRST_RECONNECT_DELAY_MS = 100;
const MAX_RECONNECT_DELAY_MS = 5_000;

/**
 * One LISTEN connection per store, shared by all of its subscriptions so that N projections cost one
 * pooled connection, not N. It is only a wake-up hint: subscriptions also poll, so while the connection
 * is down (and being re-established with backoff) events are still delivered, just later.
 */
export class NotificationListener {
  private readonly wakers = new Set<Waker>();
  private client: PoolClient | undefined;
  private connecting: Promise<void> | undefined;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private reconnectDelayMs = FIRST_RECONNECT_DELAY_MS;
  private wakeAllCount = 0;

  constructor(
    private readonly pool: Pool,
    private readonly channel: string,
  ) {}

  /** How many wake-ups went out so far: a read asked for after a change of it may see newer commits. */
  get wakeups(): number {
    return this.wakeAllCount;
  }

  /**
   * Registers a wake-up callback and starts listening if nobody was. Callers need not wait for the
   * connection: every callback is woken once LISTEN is in place, covering what was missed before.
   */
  add(wake: Waker): void {
    this.wakers.add(wake);
    if (!this.client && !this.connecting && !this.reconnectTimer) this.connecting = this.connect();
  }

  /**
   * Unregisters a callback; the last one out gives the connection back to the pool. A connection still
   * being opened is not waited for (the database may be unreachable): connect() releases it on arrival.
   */
  async remove(wake: Waker): Promise<void> {
    this.wakers.delete(wake);
    if (this.wakers.size > 0) return;
    clearTimeout(this.reconnectTimer);
    this.reconnectTimer = undefined;
    const client = this.client;
    this.client = undefined;
    if (client) await this.release(client);
  }

  private async connect(): Promise<void> {
    let client: PoolClient | undefined;
    try {
      client = await this.pool.connect();
      client.on('notification', this.onNotification);
      client.on('error', this.onConnectionLost);
      client.on('end', this.onConnectionLost);
      await client.query(`LISTEN "${this.channel}"`);
    } catch {
      if (client) this.destroy(client);
      this.connecting = undefined;
      this.scheduleReconnect();
      return;
    }
    this.connecting = undefined;
    if (this.wakers.size === 0) {
      await this.release(client);
      return;
    }
    this.client = client;
    this.reconnectDelayMs = FIRST_RECONNECT_DELAY_MS;
    // Notifications sent while we were not listening are gone; let every subscription look for itself.
    this.wakeAll();
  }

  private readonly onNotification = (msg: Notification): void => {
    if (msg.channel === this.channel) this.wakeAll(decodeCategories(msg.payload));
  };

  private readonly onConnectionLost = (): void => {
    const client = this.client;
    if (!client) return;
    this.client = undefined;
    this.destroy(client);
    this.scheduleReconnect();
  };

  private scheduleReconnect(): void {
    if (this.wakers.size === 0 || this.reconnectTimer) return;
    const delay = this.reconnectDelayMs;
    this.reconnectDelayMs = Math.min(delay * 2, MAX_RECONNECT_DELAY_MS);
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined;
      if (this.wakers.size > 0 && !this.client && !this.connecting) this.connecting = this.connect();
    }, delay);
  }

  private async release(client: PoolClient): Promise<void> {
    try {
      // A pooled connection that still LISTENs would receive our notifications for whoever borrows it next.
      await client.query(`UNLISTEN "${this.channel}"`);
    } catch {
      this.destroy(client);
      return;
    }
    this.detach(client);
    client.release();
  }

  private destroy(client: PoolClient): void {
    this.detach(client);
    // A dying connection may still emit 'error'; unhandled, that would crash the process.
    client.on('error', ignore);
    client.release(true);
  }

  private detach(client: PoolClient): void {
    client.off('notification', this.onNotification);
    client.off('error', this.onConnectionLost);
    client.off('end', this.onConnectionLost);
  }

  /** Wakes every callback with the stream categories committed to (null: anything may have changed). */
  private wakeAll(categories: string[] | null = null): void {
    this.wakeAllCount++;
    for (const wake of this.wakers) wake(categories);
  }
}

function ignore(): void {}
