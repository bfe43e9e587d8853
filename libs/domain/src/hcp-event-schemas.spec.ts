import fc from 'fast-check';
import { ERROR_CODES } from './errors';
import { EventSchemaViolation, UnknownEventSchema } from './events/event-schemas';
import { createHcpEventSchemas } from './hcp-event-schemas';
import { createHcpUpcasters, HCP_EVENT_VERSIONS } from './hcp-events';
import { jobEvent, JobQueued } from './job/job.events';
import { receivedData, REQUEST_EVENT_VERSIONS, refusedData } from './security/request.events';
import { VmCreateRequested, vmEvent } from './vm/vm.events';

const createRequested = (): VmCreateRequested =>
  vmEvent<VmCreateRequested>('VmCreateRequested', {
    vm_id: 'a1b2c3d4-0000-4000-8000-000000000001',
    job_id: 'a1b2c3d4-0000-4000-8000-000000000002',
    project_id: 'p1',
    name: 'web-1',
    zone: 'zone-a',
    image_id: 'img',
    flavor_id: 'small',
    resources: { vcpus: 2, ram_mb: 2048, disk_gb: 20 },
    placement: { provider_id: 'prov', cluster_id: 'c1', image_ref: 'tpl' },
    tags: { env: 'prod' },
    metadata: {},
    ssh_keys: ['ssh-ed25519 AAAA secret-looking-key'],
    power_on: true,
  });

describe('HCP event schemas', () => {
  const schemas = createHcpEventSchemas();

  it('has a schema for every event type of every versions record', () => {
    const missing = Object.keys(HCP_EVENT_VERSIONS).filter((type) => !schemas.has(type));
    expect(missing).toEqual([]);
  });

  it('has no schema for a type the upcasters do not know', () => {
    const upcasters = createHcpUpcasters();
    expect(schemas.types().filter((type) => !upcasters.knows(type))).toEqual([]);
  });

  it('accepts a create request as the handler writes it, with or without user data', () => {
    expect(() => schemas.check(createRequested())).not.toThrow();
    const withUserData = createRequested();
    withUserData.data.user_data = '#cloud-config';
    expect(() => schemas.check(withUserData)).not.toThrow();
  });

  it('refuses a create request without its job id, naming the type and the field', () => {
    const event = createRequested();
    delete (event.data as Partial<VmCreateRequested['data']>).job_id;
    const err = catchOf(() => schemas.check(event));
    expect(err).toBeInstanceOf(EventSchemaViolation);
    expect(err).toMatchObject({ code: 'INTERNAL_ERROR', retryable: false, field: 'job_id' });
    expect((err as Error).message).toBe(
      'VmCreateRequested event data fails its schema at job_id: missing (expected string)',
    );
  });

  it('refuses ids that are the text of a missing value', () => {
    for (const bad of ['undefined', 'null', '']) {
      const event = createRequested();
      event.data.vm_id = bad;
      expect(catchOf(() => schemas.check(event))).toMatchObject({ field: 'vm_id' });
    }
  });

  it('names a nested field and never repeats the data in its message', () => {
    const event = createRequested();
    (event.data.resources as unknown as Record<string, unknown>).vcpus = 'secret-looking-value';
    (event.data as unknown as Record<string, unknown>).power_on = 'secret-looking-value';
    const err = catchOf(() => schemas.check(event)) as EventSchemaViolation;
    expect(err.field).toBe('resources.vcpus');
    expect(err.message).not.toContain('secret-looking');
    expect(JSON.stringify(err.details)).not.toContain('secret-looking');
  });

  it('refuses a job type outside the known ones without quoting it', () => {
    const queued = jobEvent<JobQueued>('JobQueued', {
      job_id: 'j1',
      project_id: 'p1',
      type: 'vm.explode' as JobQueued['data']['type'],
      resource_id: 'vm1',
      trace_id: 't',
      actor: 'a',
      params: {},
    });
    const err = catchOf(() => schemas.check(queued)) as EventSchemaViolation;
    expect(err.message).toBe('JobQueued event data fails its schema at type: not one of the allowed values');
  });

  it('refuses an event type it has no schema for', () => {
    expect(catchOf(() => schemas.check({ type: 'VmTeleported', version: 1, data: {} }))).toBeInstanceOf(
      UnknownEventSchema,
    );
  });

  it('checks an older version after upcasting it to the current one', () => {
    const v1 = {
      type: 'ConsoleSessionRefused',
      version: 1,
      data: { session_id: 's1', project_id: 'p1', vm_id: 'v1', reason: 'token_used' },
    };
    expect(() => schemas.check(v1)).toThrow(EventSchemaViolation);
    expect(() => schemas.check(createHcpUpcasters().upcast(v1))).not.toThrow();
  });
});

describe('HCP event schemas accept what the code writes, whatever the input', () => {
  const schemas = createHcpEventSchemas();
  const anyText = fc.string({ unit: 'binary', maxLength: 300 });

  it('accepts every refusal the exception filter records, from any request', () => {
    fc.assert(
      fc.property(
        fc.record({
          actor: fc.option(anyText),
          action: anyText,
          method: fc.oneof(fc.constantFrom('GET', 'POST', 'DELETE'), anyText),
          path: anyText,
          project_id: fc.option(anyText),
          code: fc.constantFrom(...ERROR_CODES),
          status: fc.integer({ min: 400, max: 599 }),
        }),
        (facts) => {
          schemas.check({
            type: 'RequestRefused',
            version: REQUEST_EVENT_VERSIONS.RequestRefused,
            data: refusedData(facts),
          });
        },
      ),
    );
  });

  it('accepts every received request the audit interceptor records, from any parameters', () => {
    fc.assert(
      fc.property(
        fc.record({
          actor: anyText,
          method: anyText,
          route: anyText,
          scope: fc.constantFrom('tenant' as const, 'ops' as const),
          params: fc.dictionary(anyText, fc.oneof(anyText, fc.integer(), fc.constant(null))),
        }),
        (facts) => {
          schemas.check({
            type: 'RequestReceived',
            version: REQUEST_EVENT_VERSIONS.RequestReceived,
            data: receivedData(facts),
          });
        },
      ),
    );
  });

  it('accepts a create request with any free text in its names, labels, keys and user data', () => {
    fc.assert(
      fc.property(
        fc.record({
          name: anyText.filter((t) => t.length > 0),
          tags: fc.dictionary(anyText, anyText),
          metadata: fc.dictionary(anyText, anyText),
          ssh_keys: fc.array(anyText, { maxLength: 3 }),
          user_data: fc.option(anyText, { nil: undefined }),
          power_on: fc.boolean(),
          vm_id: fc.uuid(),
          job_id: fc.uuid(),
        }),
        (free) => {
          schemas.check({ ...createRequested(), data: { ...createRequested().data, ...free } });
        },
      ),
    );
  });
});

function catchOf(f: () => void): unknown {
  try {
    f();
  } catch (err) {
    return err;
  }
  throw new Error('expected a failure');
}
