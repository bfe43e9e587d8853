/**
 * Ids of stored events whose data this process has checked against its schema. A stored event never
 * changes, and aggregates are read again on every command (a project's quota stream on every create), so
 * each event is checked once per process instead of on every read. Bounded: the oldest ids are forgotten
 * first, and an event read again after that is simply checked again.
 */
export class CheckedEventIds {
  private readonly ids = new Set<string>();

  constructor(private readonly capacity = 50_000) {}

  has(id: string): boolean {
    return this.ids.has(id);
  }

  add(id: string): void {
    if (this.ids.has(id)) return;
    if (this.ids.size >= this.capacity) {
      const oldest = this.ids.values().next();
      if (!oldest.done) this.ids.delete(oldest.value);
    }
    this.ids.add(id);
  }
}
