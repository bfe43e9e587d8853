import { Inject, Injectable } from '@nestjs/common';
import {
  evolveVm,
  notFound,
  VmCreateRequested,
  VmCreateRequestedData,
  VmEvent,
  VmState,
  vmStreamId,
} from '@hcp/domain';
import { EventContext } from '@hcp/domain';
import { DomainEventCodec, EventStore, ExpectedRevision, StreamAppend } from '@hcp/eventstore';
import { AggregateRepository } from '../platform/event-sourcing/aggregate-repository';
import { EVENT_STORE } from '../platform/tokens';

@Injectable()
export class VmRepository extends AggregateRepository<VmState, VmEvent> {
  constructor(@Inject(EVENT_STORE) store: EventStore, codec: DomainEventCodec) {
    super(store, codec, vmStreamId, evolveVm);
  }

  /** The append of a decision on the VM, to commit in another aggregate's appendMany (a create's quota). */
  opening(vmId: string, events: VmEvent[], context: EventContext, expected: ExpectedRevision): StreamAppend {
    return { streamId: this.streamOf(vmId), events: events.map((e) => this.codec.encode(e, context)), expected };
  }

  /**
   * The create request as the tenant sent it. The folded state leaves out what only the provider needs
   * once (ssh keys, user data), so the create job reads it from the stream's first event. `whole` reads
   * the whole stream instead, which the store answers in one statement with the other whole-stream reads
   * asked at the same moment (the job's load of the VM): for a VM whose stream is still short.
   */
  async creationRequest(vmId: string, { whole = false }: { whole?: boolean } = {}): Promise<VmCreateRequestedData> {
    const [first] = await this.store.readStream(this.streamOf(vmId), whole ? {} : { maxCount: 1 });
    const decoded = first ? this.codec.decode<VmCreateRequested>(first) : null;
    if (decoded?.event.type !== 'VmCreateRequested') throw notFound('VM');
    return decoded.event.data;
  }

  /** Every event of the VM in order, for what its folded state forgets (how an earlier job ended). */
  async history(vmId: string): Promise<VmEvent[]> {
    const recorded = await this.store.readStream(this.streamOf(vmId));
    return recorded.map((r) => this.codec.decode<VmEvent>(r).event);
  }
}
