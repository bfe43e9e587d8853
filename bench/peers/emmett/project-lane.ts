/**
 * Group commit for the `emmett_group` form: while one CommandHandler call for a project is in flight,
 * the creates that arrive for that project wait; the next call decides all of them, one handler each
 * in arrival order (each sees the state the ones before it leave), and appends their events in one
 * append. Per-create outcomes come from the handlers' last run (Emmett re-runs them all on a version
 * conflict).
 */
export class ProjectLanes<Item, Outcome> {
  private readonly waiting = new Map<
    string,
    Array<{ item: Item; resolve: (o: Outcome) => void; reject: (e: unknown) => void }>
  >();
  private readonly busy = new Set<string>();

  constructor(private readonly decideGroup: (project: string, items: Item[]) => Promise<Outcome[]>) {}

  submit(project: string, item: Item): Promise<Outcome> {
    return new Promise((resolve, reject) => {
      const queue = this.waiting.get(project) ?? [];
      queue.push({ item, resolve, reject });
      this.waiting.set(project, queue);
      if (!this.busy.has(project)) void this.drain(project);
    });
  }

  private async drain(project: string): Promise<void> {
    this.busy.add(project);
    try {
      for (;;) {
        const group = this.waiting.get(project);
        if (!group?.length) break;
        this.waiting.delete(project);
        try {
          const outcomes = await this.decideGroup(
            project,
            group.map((g) => g.item),
          );
          for (const [i, g] of group.entries()) g.resolve(outcomes[i]!);
        } catch (err) {
          for (const g of group) g.reject(err);
        }
      }
    } finally {
      this.busy.delete(project);
    }
  }
}
