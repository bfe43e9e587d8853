import { randomUUID } from 'node:crypto';
import { createHcpEventSchemas, createHcpUpcasters, EventSchemaViolation, UnknownEventSchema } from '@hcp/domain';
import { InMemoryEventStore } from '../in-memory/in-memory-event-store';
import { DomainEventCodec } from './domain-event-codec';

const context = { actor: 'alice', trace_id: 't-1', occurred_at: '2026-12-03T10:00:00.000Z' };

describe('DomainEventCodec at the edge of the store', () => {
  const codec = new DomainEventCodec(createHcpUpcasters());

  it('refuses to encode data its schema does not accept, so nothing reaches the store', async () => {
    const store = new InMemoryEventStore();
    const append = async () =>
      store.append(
        'vm-1',
        [codec.encode({ type: 'VmStopRequested', version: 1, data: { job_id: 'j1', force: 'yes' } }, context)],
        'no_stream',
      );
    await expect(append()).rejects.toThrow(EventSchemaViolation);
    await expect(append()).rejects.toMatchObject({ code: 'INTERNAL_ERROR', field: 'project_id' });
    expect(await store.readStream('vm-1')).toEqual([]);
    expect(await store.headPosition()).toBe(-1n);
  });

  it('refuses to encode a type without a schema', () => {
    expect(() => codec.encode({ type: 'VmTeleported', version: 1, data: {} }, context)).toThrow(UnknownEventSchema);
  });

  it('refuses to decode a stored event whose data fails its schema (a poison event for its readers)', async () => {
    const store = new InMemoryEventStore();
    await store.append(
      'vm-2',
      [{ id: randomUUID(), type: 'VmStopped', data: {}, metadata: { schema_version: 1 } }],
      'no_stream',
    );
    const [stored] = await store.readStream('vm-2');
    expect(codec.knows(stored)).toBe(true);
    expect(() => codec.decode(stored)).toThrow(
      'VmStopped event data fails its schema at job_id: missing (expected string)',
    );
  });

  it('checks an older stored version after upcasting it', async () => {
    const store = new InMemoryEventStore();
    const ref = { session_id: 's1', project_id: 'p1', vm_id: 'v1' };
    await store.append(
      'console-s1',
      [
        {
          id: randomUUID(),
          type: 'ConsoleSessionRefused',
          data: { ...ref, reason: 'token_used' },
          metadata: { schema_version: 1 },
        },
        {
          id: randomUUID(),
          type: 'ConsoleSessionRefused',
          data: { ...ref, reason: 'melted' },
          metadata: { schema_version: 1 },
        },
      ],
      'no_stream',
    );
    const [good, bad] = await store.readStream('console-s1');
    expect(codec.decode(good).event).toEqual({
      type: 'ConsoleSessionRefused',
      version: 2,
      data: { ...ref, reason: 'token_used', client_address: null },
    });
    expect(() => codec.decode(bad)).toThrow('ConsoleSessionRefused event data fails its schema at reason');
  });

  it('checks a stored event once per process: read again, or written by this process, it is not checked again', async () => {
    const schemas = createHcpEventSchemas();
    const checks = jest.spyOn(schemas, 'check');
    const counted = new DomainEventCodec(createHcpUpcasters(), schemas);
    const store = new InMemoryEventStore();
    const stopped = { type: 'VmStopped', version: 1, data: { job_id: 'j1' } };
    await store.append('vm-3', [counted.encode(stopped, context)], 'no_stream');
    await store.append(
      'vm-4',
      [{ id: randomUUID(), type: 'VmStopped', data: { job_id: 'j2' }, metadata: { schema_version: 1 } }],
      'no_stream',
    );
    const [ours] = await store.readStream('vm-3');
    const [theirs] = await store.readStream('vm-4');

    for (let i = 0; i < 3; i++) {
      counted.decode(ours);
      counted.decode(theirs);
    }

    expect(checks).toHaveBeenCalledTimes(2);
  });

  it('refuses a poison event every time it is read, not only the first', async () => {
    const store = new InMemoryEventStore();
    await store.append(
      'vm-5',
      [{ id: randomUUID(), type: 'VmStopped', data: {}, metadata: { schema_version: 1 } }],
      'no_stream',
    );
    const [stored] = await store.readStream('vm-5');

    expect(() => codec.decode(stored)).toThrow(EventSchemaViolation);
    expect(() => codec.decode(stored)).toThrow(EventSchemaViolation);
  });
});
