/**
 * Ids of stored events whose data this process has checked against its schema. A stored event never
 * changes, and aggregates are read again on every command (a project's quota stream on every create), so
 * each event is checked once per process instead of on every read. Bounded: ids are kept in two
 * generations of half the capacity each; when the newer one fills, the older one is forgotten whole, and
 * an event read again after that is simply checked again.
 *
 * Not one Set evicting its first entry per insert: V8 leaves a deleted entry's slot in place until the
 * table is rebuilt, so finding the first live entry walks every slot deleted before it. Past the capacity
 * each add cost ~15 µs (3.1 s for 200,000 ids, against 37 ms without eviction), a quarter of a rebuild's
 * CPU (bench/README.md, "Issue #21").
 */
export class CheckedEventIds {
  private current = new Set<string>();
  private previous = new Set<string>();
  private readonly generationSize: number;

  constructor(capacity = 50_000) {
    this.generationSize = Math.max(1, Math.ceil(capacity / 2));
  }

  has(id: string): boolean {
    return this.current.has(id) || this.previous.has(id);
  }

  add(id: string): void {
    if (this.has(id)) return;
    if (this.current.size >= this.generationSize) {
      this.previous = this.current;
      this.current = new Set();
    }
    this.current.add(id);
  }
}
