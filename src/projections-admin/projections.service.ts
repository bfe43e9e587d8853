import { Inject, Injectable, Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { conflict, notFound } from '@hcp/domain';
import { DomainEventCodec, EventStore } from '@hcp/eventstore';
import { readModelProjections, rebuildProjection, RebuildResult, SILENT_SINKS } from '@hcp/projections';
import { EVENT_STORE } from '../platform/tokens';
import { DeadLettersService } from './dead-letters.service';
import { ProjectionHost } from './projection-host';

export interface ProjectionView {
  name: string;
  kind: 'read_model' | 'process_manager';
  position: string | null;
  head: string;
  lag: string | null;
  updated_at: string | null;
  rebuilding: boolean;
  last_rebuild: RebuildResult | null;
  /** Open dead letters: events it could not apply and ops have neither retried successfully nor skipped. */
  dead_letters: number;
}

/** Ops view and rebuilds of the projections (positions come from the shared checkpoint table). */
@Injectable()
export class ProjectionsService {
  private readonly logger = new Logger('projections');
  private readonly running = new Map<string, Promise<RebuildResult>>();
  private readonly finished = new Map<string, RebuildResult>();

  constructor(
    private readonly db: DataSource,
    @Inject(EVENT_STORE) private readonly store: EventStore,
    private readonly codec: DomainEventCodec,
    private readonly host: ProjectionHost,
    private readonly deadLetters: DeadLettersService,
  ) {}

  async list(): Promise<ProjectionView[]> {
    const [head, rows, deadLetters] = await Promise.all([
      this.store.headPosition(),
      this.db.query(`SELECT name, position::text AS position, updated_at FROM projection_checkpoints`) as Promise<
        Array<{ name: string; position: string; updated_at: Date }>
      >,
      this.deadLetters.openCounts(),
    ]);
    const processManagers = this.host.processManagerNames();
    const names = [...readModelProjections(SILENT_SINKS).map((p) => p.name), ...processManagers];
    return names.map((name) => {
      const row = rows.find((r) => r.name === name);
      return {
        name,
        kind: processManagers.includes(name) ? 'process_manager' : 'read_model',
        position: row?.position ?? null,
        head: head.toString(),
        lag: row ? (head - BigInt(row.position) > 0n ? head - BigInt(row.position) : 0n).toString() : null,
        updated_at: row?.updated_at.toISOString() ?? null,
        rebuilding: this.running.has(name),
        last_rebuild: this.finished.get(name) ?? null,
        dead_letters: deadLetters.get(name) ?? 0,
      };
    });
  }

  /** Starts a rebuild in this process and returns at once; the promise is for callers that wait. */
  start(name: string): Promise<RebuildResult> {
    const projection = readModelProjections(SILENT_SINKS).find((p) => p.name === name);
    if (!projection)
      throw this.host.processManagerNames().includes(name)
        ? conflict(`${name} is a process manager and is never rebuilt`)
        : notFound('projection');
    if (this.running.has(name)) throw conflict(`${name} is being rebuilt already`);
    const run = rebuildProjection(this.db, this.store, this.codec, projection)
      .then((result) => {
        this.finished.set(name, result);
        return result;
      })
      .finally(() => this.running.delete(name));
    run.catch((err) => this.logger.error(`rebuild of ${name} failed: ${(err as Error).message}`));
    this.running.set(name, run);
    return run;
  }
}
