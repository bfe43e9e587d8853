import 'reflect-metadata';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type ArgumentMetadata, ValidationPipe } from '@nestjs/common';
import { getMetadataStorage } from 'class-validator';
import * as fc from 'fast-check';
import { HcpError } from '@hcp/domain';
import { CreateVmDto } from '../../vms/vm.dto';
import { rulesOf } from './compiled-rules';
import { STRICT_VALIDATION, strictValidationPipe } from './validation-pipe';

type Dto = new () => object;

/** Every class with class-validator rules that the service's sources export. */
function serviceDtos(): Dto[] {
  const root = join(__dirname, '..', '..');
  const files = (readdirSync(root, { recursive: true }) as string[])
    .filter((f) => f.endsWith('.ts') && !f.endsWith('.spec.ts'))
    .map((f) => join(root, f))
    .filter((f) => /from 'class-validator'/.test(readFileSync(f, 'utf8')));
  const classes = new Set<Dto>();
  for (const file of files) {
    for (const exported of Object.values(require(file) as Record<string, unknown>)) {
      if (typeof exported === 'function' && rulesOf(exported as Dto).length > 0) classes.add(exported as Dto);
    }
  }
  return [...classes];
}

const SSH_KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHlZYbNl7rMudkQn9R5hKhsnpmWCKkTr8PiDVkvtdFVY u@h';

/** Values that some DTO's property accepts and others refuse: what a client sends, right and wrong. */
const SEEDS: unknown[] = [
  'vm-1',
  'zone-a',
  'Web Image 1',
  'c-1',
  'p-1',
  'linux',
  'env:prod',
  'abc_-',
  'ops said so',
  'https://pve.example:8006',
  '2026-01-01T00:00:00Z',
  '2026-13-01',
  'aGVsbG8=',
  'a==b',
  '3b241101-e2bb-4255-8caf-4136c566a962',
  '3b241101-e2bb-4255-8caf-4136c566a96',
  '50',
  '0',
  '',
  ' ',
  '-bad-',
  'undefined',
  'x'.repeat(300),
  0,
  1,
  50,
  60,
  64,
  1024,
  200,
  201,
  -1,
  1.5,
  true,
  false,
  null,
  [],
  [SSH_KEY],
  ['ssh-ed25519 AAAA'],
  ['c-1', 'c-2'],
  ['env:prod'],
  [1],
  {},
  { env: 'prod' },
  { 'pve:1': 'local:100' },
  { 'bad key': 'v' },
  { k: 1 },
  { vcpus: 1, ram_mb: 64, disk_gb: 1 },
  { ca_pem: '-----BEGIN CERTIFICATE-----' },
];

/** The values each property of `dto` accepts, found by class-validator itself. */
async function acceptedSeeds(dto: Dto, seeds: unknown[]): Promise<Map<string, unknown[]>> {
  const reference = new ValidationPipe(STRICT_VALIDATION);
  const accepted = new Map<string, unknown[]>();
  for (const property of new Set(rulesOf(dto).map((rule) => rule.propertyName))) {
    const values: unknown[] = [];
    for (const value of [undefined, ...seeds]) {
      const result = await outcome(reference, dto, value === undefined ? {} : { [property]: value }, 'body');
      if (!faults(result, property)) values.push(value);
    }
    accepted.set(property, values);
  }
  return accepted;
}

/** Whether an outcome faults the property: a refusal naming it (or a field under it), or any other failure. */
function faults(result: Outcome, property: string): boolean {
  if ('accepted' in result) return false;
  if ('failed' in result) return true;
  const fields = (result.refused.details as { fields?: Array<{ field: string }> } | undefined)?.fields ?? [];
  return fields.some((f) => f.field.split('.')[0] === property);
}

/** Bodies mostly made of accepted values, with wrong values, random JSON and unknown fields mixed in. */
function bodies(accepted: Map<string, unknown[]>, seeds: unknown[]): fc.Arbitrary<Record<string, unknown>> {
  const fields = Object.fromEntries(
    [...accepted].map(([property, values]) => [
      property,
      fc.oneof(
        { weight: 12, arbitrary: fc.constantFrom(...values) },
        { weight: 1, arbitrary: fc.constantFrom(undefined, ...seeds) },
        { weight: 1, arbitrary: fc.jsonValue() },
      ),
    ]),
  );
  const extra = fc.option(
    fc.tuple(fc.constantFrom('unknown', 'hasOwnProperty', 'toString', 'constructor'), fc.jsonValue()),
    {
      freq: 10,
    },
  );
  return fc.tuple(fc.record(fields), extra).map(([record, unknown]) => {
    const body = Object.fromEntries(Object.entries(record).filter(([, value]) => value !== undefined));
    if (unknown) Object.defineProperty(body, unknown[0], { value: unknown[1], enumerable: true, writable: true });
    return body;
  });
}

type Outcome =
  | { accepted: object; prototype: object | null }
  | { refused: { code: string; details: unknown } }
  | { failed: string };

/**
 * What a pipe does with the value. A failure other than a refusal counts as an outcome too: e.g.
 * class-transformer's `@Type(() => Number)` throws on `{ "toString": "" }` (a JSON body could send it; a
 * query string cannot), and both pipes must do the same.
 */
async function outcome(
  pipe: ValidationPipe,
  dto: Dto,
  body: unknown,
  type: ArgumentMetadata['type'],
): Promise<Outcome> {
  try {
    const accepted = await pipe.transform(structuredClone(body), { type, metatype: dto });
    return { accepted, prototype: Object.getPrototypeOf(accepted) };
  } catch (error) {
    if (error instanceof HcpError) return { refused: { code: error.code, details: error.details } };
    return { failed: String(error) };
  }
}

describe('strictValidationPipe', () => {
  const dtos = serviceDtos();

  it('finds the service DTOs it is checked against', () => {
    expect(dtos.length).toBeGreaterThanOrEqual(20);
    expect(dtos).toContain(CreateVmDto);
  });

  it.each(dtos.map((dto) => [dto.name, dto] as const))(
    'accepts and refuses what Nest and class-validator alone do, with the same errors: %s',
    async (_name, dto) => {
      const seeds = [
        ...SEEDS,
        ...rulesOf(dto).flatMap((rule) => (rule.name === 'isIn' ? (rule.constraints[0] as unknown[]) : [])),
      ];
      const accepted = await acceptedSeeds(dto, seeds);
      const compiled = strictValidationPipe();
      const reference = new ValidationPipe(STRICT_VALIDATION);
      const seen = { accepted: 0, refused: 0 };
      await fc.assert(
        fc.asyncProperty(
          bodies(accepted, seeds),
          fc.constantFrom('body', 'query') as fc.Arbitrary<'body' | 'query'>,
          async (body, type) => {
            const expected = await outcome(reference, dto, body, type);
            expect(await outcome(compiled, dto, body, type)).toStrictEqual(expected);
            seen['accepted' in expected ? 'accepted' : 'refused'] += 1;
          },
        ),
        // The counterexample a CI run found when failures other than refusals were not compared.
        { numRuns: 200, examples: [[{ limit: { toString: '' } }, 'body']] },
      );
      // Both answers were exercised, so the comparison is not of refusals alone.
      expect(seen.accepted).toBeGreaterThan(0);
      expect(seen.refused).toBeGreaterThan(0);
    },
  );

  it('looks up a class rules once, not on every request', async () => {
    const storage = getMetadataStorage();
    const lookups = jest.spyOn(storage, 'getTargetValidationMetadatas');
    try {
      const pipe = strictValidationPipe();
      const body = {
        name: 'vm-1',
        zone: 'zone-a',
        image_id: '3b241101-e2bb-4255-8caf-4136c566a962',
        flavor_id: '3b241101-e2bb-4255-8caf-4136c566a962',
        tags: { env: 'prod' },
        ssh_keys: [SSH_KEY],
      };
      for (let i = 0; i < 50; i++) {
        await expect(pipe.transform({ ...body }, { type: 'body', metatype: CreateVmDto })).resolves.toBeInstanceOf(
          CreateVmDto,
        );
      }
      expect(lookups).toHaveBeenCalledTimes(1);
    } finally {
      lookups.mockRestore();
    }
  });
});
