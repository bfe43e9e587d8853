import { MeteringRecord } from '@hcp/domain';
import { MessageEnvelope, MessagePublisher, toRecord } from '@hcp/messaging';
import { publisherSinks } from '@hcp/projections';

// The example billing consumer's parser of Kafka messages (plain JavaScript, a customer's own code).
const { recordOf } = require('../../../examples/billing-consumer/src/consume') as {
  recordOf: (message: { value: Buffer | null }) => { record?: MeteringRecord; problem?: string };
};

const RECORD: MeteringRecord = {
  event_id: '0b7f6f0e-8a3c-4c8e-9d55-3f1f0c2a9e11:on',
  kind: 'vm.powered_on',
  project_id: 'demo',
  vm_id: 'f4f0a3a5-5b0e-4d4b-9d0c-6d2c7c1e8a10',
  zone: 'local',
  flavor_id: '7d9e3c1a-2b4f-4e6a-8c0d-1f2e3d4c5b6a',
  resources: { vcpus: 2, ram_mb: 4096, disk_gb: 40 },
  effective_at: '2026-12-04T09:00:00.123Z',
};

/** What HCP puts on hcp.metering.v1 for a record: the metering sink's envelope, as the Kafka publisher encodes it. */
async function wireValueOf(record: MeteringRecord): Promise<Buffer> {
  const sent: MessageEnvelope[] = [];
  const publisher = {
    publish: async (_topic: string, messages: readonly MessageEnvelope[]) => void sent.push(...messages),
  };
  await publisherSinks(publisher as unknown as MessagePublisher).metering.publish([record]);
  return Buffer.from(toRecord(sent[0]!).value);
}

describe('the example billing consumer reading HCP messages', () => {
  it("takes the metering record out of HCP's envelope, whole", async () => {
    expect(recordOf({ value: await wireValueOf(RECORD) })).toEqual({ record: RECORD });
  });

  it('passes over what is not a metering record, saying why', async () => {
    const envelope = JSON.parse((await wireValueOf(RECORD)).toString());
    const value = (v: unknown) => ({ value: Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)) });
    const problems = [
      { value: null },
      value('not json'),
      value({ ...envelope, schema_version: 2 }),
      value({ ...envelope, event_id: 'another' }),
      value({ ...envelope, payload: { ...RECORD, resources: { vcpus: -1, ram_mb: 1 } } }),
      value({ ...envelope, payload: { ...RECORD, effective_at: 'yesterday' } }),
      value({ ...envelope, payload: { ...RECORD, vm_id: undefined } }),
    ].map((m) => recordOf(m).problem);
    expect(problems.every((p) => typeof p === 'string' && p.length > 0)).toBe(true);
  });
});
