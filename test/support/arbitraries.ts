/**
 * fast-check arbitraries of hostile HTTP input: path segments, query strings, headers and bodies.
 *
 * Values are descriptors (not the final bytes) so that a counterexample stays readable: a 300 kB string
 * prints as `"a"×300000`, a 5000-deep body as `{ kind: "deep", depth: 5000 }`. The `render*` functions
 * turn them into what is sent.
 */
import * as fc from 'fast-check';

// ---------------------------------------------------------------------------------------------------------
// Text

/** A long text that prints short in counterexamples and serializes (JSON) as the full string. */
export class Repeat {
  constructor(
    readonly unit: string,
    readonly times: number,
  ) {}

  toString(): string {
    return this.unit.repeat(this.times);
  }

  toJSON(): string {
    return this.toString();
  }

  [fc.toStringMethod](): string {
    return `${JSON.stringify(this.unit)}×${this.times}`;
  }
}

export type Text = string | Repeat;

/** `{ k0: "v", k1: "v", ... }` with n entries, printed as `ManyEntries(n)`. */
export class ManyEntries {
  constructor(readonly n: number) {}

  toJSON(): Record<string, string> {
    return Object.fromEntries(Array.from({ length: this.n }, (_, i) => [`k${i}`, 'v']));
  }

  [fc.toStringMethod](): string {
    return `ManyEntries(${this.n})`;
  }
}

export const textOf = (t: Text): string => (typeof t === 'string' ? t : t.toString());

/** Lone surrogates replaced, so encodeURIComponent cannot throw (the URL parser does the same). */
export function wellFormed(s: string): string {
  return s.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd');
}

/** Any UTF-16 code unit, lone surrogates and NUL included (JSON bodies carry them as `\uXXXX`). */
const utf16Unit = fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c));

/**
 * Strings an attacker tries first. None of them contains what the leak check looks for (stack frames,
 * `node_modules`, SQL error text), so a reflected one cannot be mistaken for a leak.
 */
export const HOSTILE_STRINGS: readonly string[] = [
  '',
  ' ',
  '.',
  '..',
  '../',
  '../../../etc/passwd',
  '..\\..\\windows',
  '%00',
  '\u0000',
  'a\u0000b',
  '%2e%2e%2f',
  '%252e%252e%252f',
  '%',
  '%zz',
  '%ff',
  '%C0%AE',
  "' OR 1=1--",
  '" OR ""="',
  "'; DROP TABLE hcp_events; --",
  '1; SELECT pg_sleep(5)',
  '$where',
  '{"$gt":""}',
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'hasOwnProperty',
  '__defineGetter__',
  '<script>alert(1)</script>',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a log4shell probe, sent as the literal text it is
  '${jndi:ldap://127.0.0.1/a}',
  '{{7*7}}',
  '\\',
  '/',
  '//',
  '?',
  '#',
  '&',
  '=',
  ';',
  ',',
  '*',
  ':',
  'a:b',
  '\r\n',
  '\t',
  '💥',
  'é',
  'Ω≈ç√∫',
  '\u202eevil',
  '\ufeff',
  '\ud800',
  'ＡＢＣ',
  'null',
  'undefined',
  'NaN',
  'true',
  '-1',
  '0',
  '1e309',
  '9007199254740993',
  '[]',
  '{}',
  '00000000-0000-0000-0000-000000000000',
  'FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF',
  'admin',
];

/**
 * Long texts. Units that percent-encoding blows up are kept shorter, so that a request stays within
 * Node's 16 kB request-head limit (the test also checks the whole request head before sending it).
 */
const longText: fc.Arbitrary<Text> = fc.oneof(
  fc
    .tuple(fc.constantFrom('a', '9', 'A-'), fc.constantFrom(64, 255, 256, 300, 1024, 1500))
    .map(([unit, times]) => new Repeat(unit, times)),
  fc
    .tuple(fc.constantFrom('../', '%', '💥', 'é', '\u0000', ' '), fc.constantFrom(64, 100, 200))
    .map(([unit, times]) => new Repeat(unit, times)),
);

/** Short strings of the characters storage and protocols choke on: NUL, C0/C1 controls, lone surrogates, non-characters. */
export const controlText: fc.Arbitrary<string> = fc.string({
  unit: fc.oneof(
    { weight: 3, arbitrary: fc.constant('\u0000') },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        '\u0001',
        '\u001b',
        '\u001f',
        '\u007f',
        '\u0085',
        '\u00a0',
        '\u2028',
        '\u200b',
        '\ud800',
        '\udfff',
        '\ufffe',
        '\uffff',
        'a',
        ':',
      ),
    },
  ),
  minLength: 1,
  maxLength: 6,
});

/** Hostile text of any kind: the list above, control characters, long texts, random strings of every flavour. */
export const hostileText: fc.Arbitrary<Text> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...HOSTILE_STRINGS) },
  { weight: 1, arbitrary: controlText },
  { weight: 1, arbitrary: longText },
  { weight: 2, arbitrary: fc.string({ maxLength: 30 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 12 }) },
  { weight: 1, arbitrary: fc.string({ unit: utf16Unit, maxLength: 12 }) },
);

// ---------------------------------------------------------------------------------------------------------
// Paths

export type Encoding = 'raw' | 'encoded' | 'double-encoded';

/** A path parameter: a value and how it is put into the URL. */
export interface PathParam {
  value: Text;
  encoding: Encoding;
}

export function renderPathParam(p: PathParam): string {
  const text = textOf(p.value);
  switch (p.encoding) {
    // The URL parser percent-encodes what it must; `?`, `#`, `/` and `..` keep their meaning on purpose.
    case 'raw':
      return text;
    case 'encoded':
      return encodeURIComponent(wellFormed(text));
    case 'double-encoded':
      return encodeURIComponent(encodeURIComponent(wellFormed(text)));
  }
}

/** Path parameter values: mostly the given real ones, then random UUIDs, then hostile text. */
export function pathParamArb(known: readonly string[]): fc.Arbitrary<PathParam> {
  const encoding = fc.constantFrom<Encoding>('encoded', 'raw', 'double-encoded');
  return fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(...known).map((value): PathParam => ({ value, encoding: 'encoded' })) },
    {
      weight: 1,
      arbitrary: fc
        .constantFrom(...known)
        .map((value): PathParam => ({ value: value.toUpperCase(), encoding: 'encoded' })),
    },
    { weight: 1, arbitrary: fc.uuid().map((value): PathParam => ({ value, encoding: 'encoded' })) },
    { weight: 3, arbitrary: fc.record({ value: hostileText, encoding }) },
  );
}

/** Something after the route's own path: nothing mostly, else a slash or a hostile extra segment. */
export type PathSuffix = '' | '/' | '//' | '/.' | '/..' | { segment: PathParam };

export const pathSuffixArb: fc.Arbitrary<PathSuffix> = fc.oneof(
  { weight: 6, arbitrary: fc.constant<PathSuffix>('') },
  { weight: 2, arbitrary: fc.constantFrom<PathSuffix>('/', '//', '/.', '/..') },
  {
    weight: 2,
    arbitrary: fc
      .record({ value: hostileText, encoding: fc.constantFrom<Encoding>('encoded', 'raw') })
      .map((segment): PathSuffix => ({ segment })),
  },
);

export function renderPathSuffix(s: PathSuffix): string {
  return typeof s === 'string' ? s : `/${renderPathParam(s.segment)}`;
}

// ---------------------------------------------------------------------------------------------------------
// Query strings

/** The query parameters the API reads (list filters and paging). */
const QUERY_PARAMS = ['limit', 'cursor', 'tag', 'name', 'zone', 'status', 'resource_id'];

/** Others: filters of the ops lists, case and bracket variants, prototype keys. */
const OTHER_QUERY_KEYS = [
  'project',
  'actor',
  'action',
  'target',
  'from',
  'to',
  'force',
  'LIMIT',
  ' limit',
  'limit[]',
  'tag[]',
  'tag[a]',
  'cursor[0]',
  '__proto__',
  '__proto__[admin]',
  'constructor',
  'constructor[prototype][admin]',
  'prototype',
  'hasOwnProperty',
  '',
  '=',
  '&',
];

const LIMIT_JUNK = [
  '',
  ' ',
  '0',
  '-1',
  '1',
  '50',
  '200',
  '201',
  '1.5',
  '1e2',
  '1e999',
  '0x10',
  '010',
  ' 1',
  '1 ',
  '+1',
  'NaN',
  'Infinity',
  '-0',
  'null',
  'true',
  '[]',
  '9'.repeat(40),
  '２',
];

/** A base64url cursor around a forged JSON payload: keyset cursors are `[created_at, id]`. */
const forgedCursor: fc.Arbitrary<string> = fc
  .oneof(
    {
      weight: 3,
      arbitrary: fc.tuple(
        fc.oneof(
          // the ends of JavaScript's time range and of PostgreSQL's, year 0, five- and six-digit years
          {
            weight: 5,
            arbitrary: fc.constantFrom(
              '+275760-09-13T00:00:00.000Z',
              '-271821-04-20T00:00:00.000Z',
              '+010000-01-01T00:00:00.000Z',
              '-000001-01-01T00:00:00.000Z',
              '0000-01-01T00:00:00.000Z',
              '0001-01-01T00:00:00.000Z',
              '9999-12-31T23:59:59.999Z',
              '1970-01-01T00:00:00.000Z',
            ),
          },
          fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
          fc
            .date({ noInvalidDate: true, min: new Date('1990-01-01T00:00:00Z'), max: new Date('2100-01-01T00:00:00Z') })
            .map((d) => d.toISOString()),
          fc.constantFrom(
            '2026-01-01T00:00:00Z',
            '2026-01-01',
            'now',
            'infinity',
            '-infinity',
            'epoch',
            'allballs',
            '2026-13-45T99:99:99.999Z',
          ),
          fc.string({ maxLength: 20 }),
          fc.integer(),
        ),
        fc.oneof(
          { weight: 6, arbitrary: fc.uuid() },
          { weight: 1, arbitrary: fc.constantFrom(...HOSTILE_STRINGS) },
          { weight: 1, arbitrary: fc.integer() },
        ),
      ),
    },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  )
  .map((payload) => Buffer.from(JSON.stringify(payload) ?? '').toString('base64url'));

const cursorJunk: fc.Arbitrary<Text> = fc.oneof(
  { weight: 6, arbitrary: forgedCursor },
  fc.base64String({ maxLength: 64 }).map((s) => s.replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')),
  fc.base64String({ maxLength: 64 }),
  fc.constantFrom('', '=', '====', 'e30', 'W10', 'bnVsbA', 'WyJhIl0', '!!!'),
  fc.constant(new Repeat('A', 600)),
);

const tagJunk: fc.Arbitrary<Text> = fc.oneof(
  fc
    .tuple(
      fc.oneof(
        { weight: 3, arbitrary: fc.constantFrom('env', 'a', 'A-b_c.d/e') },
        { weight: 1, arbitrary: fc.constantFrom('', '-x', '💥') },
        { weight: 1, arbitrary: fc.string({ maxLength: 70 }) },
      ),
      fc.oneof(fc.constantFrom(...HOSTILE_STRINGS), controlText, fc.string({ unit: utf16Unit, maxLength: 10 })),
    )
    .map(([k, v]) => `${k}:${v}`),
  fc.constantFrom(':', 'env', 'env:', ':prod', 'env:prod:x', 'env%3Aprod'),
  fc.constant(new Repeat('k', 70)).map((k) => `${k}:v`),
  fc.constant(new Repeat('v', 300)).map((v) => `k:${v}`),
);

export type QueryPair = [key: Text, value: Text];

export interface QuerySpec {
  pairs: QueryPair[];
  /** `raw`: sent as generated, so `%`, `&` and `=` inside keys and values keep their URL meaning. */
  encoding: 'encoded' | 'raw';
}

/** Values aimed at a parameter: junk page sizes for `limit`, forged cursors for `cursor`, and so on. */
const specificValue = (key: Text): fc.Arbitrary<Text> => {
  const k = textOf(key);
  return k.startsWith('limit') || k === 'LIMIT'
    ? fc.constantFrom(...LIMIT_JUNK)
    : k.startsWith('cursor')
      ? cursorJunk
      : k.startsWith('tag')
        ? tagJunk
        : fc.oneof(hostileText, controlText);
};

const queryValue = (key: Text): fc.Arbitrary<Text> =>
  fc.oneof(
    { weight: 4, arbitrary: specificValue(key) },
    { weight: 2, arbitrary: controlText },
    { weight: 1, arbitrary: hostileText },
    { weight: 1, arbitrary: fc.string({ maxLength: 20 }) },
  );

const queryPair: fc.Arbitrary<QueryPair> = fc
  .oneof(
    { weight: 6, arbitrary: fc.constantFrom(...QUERY_PARAMS) },
    { weight: 2, arbitrary: fc.constantFrom(...OTHER_QUERY_KEYS) },
    { weight: 1, arbitrary: fc.string({ maxLength: 12 }) },
    { weight: 1, arbitrary: hostileText },
  )
  .chain((key) => queryValue(key).map((value): QueryPair => [key, value]));

/** One of the parameters the API reads, with a hostile value (paging and free-text filters first). */
const twistedParam: fc.Arbitrary<QueryPair> = fc
  .oneof(
    { weight: 4, arbitrary: fc.constant('cursor') },
    { weight: 2, arbitrary: fc.constantFrom('name', 'tag') },
    { weight: 1, arbitrary: fc.constantFrom(...QUERY_PARAMS) },
  )
  .chain((key) =>
    fc
      .oneof({ weight: 4, arbitrary: specificValue(key) }, { weight: 1, arbitrary: queryValue(key) })
      .map((value): QueryPair => [key, value]),
  );

/**
 * A valid page size (or none) and one parameter read by the API with a hostile value, percent-encoded:
 * the query that gets furthest in, past validation and into the database.
 */
export const twistedQuerySpecArb: fc.Arbitrary<QuerySpec> = fc
  .tuple(fc.option(fc.integer({ min: 1, max: 200 })), twistedParam)
  .map(
    ([limit, twisted]): QuerySpec => ({
      pairs: limit === null ? [twisted] : [['limit', String(limit)], twisted],
      encoding: 'encoded',
    }),
  );

/** Any query string: random keys and values, repeated keys, raw (unencoded) text. */
export const querySpecArb: fc.Arbitrary<QuerySpec> = fc.record({
  pairs: fc.oneof(
    { weight: 1, arbitrary: twistedQuerySpecArb.map((q) => q.pairs) },
    { weight: 3, arbitrary: fc.array(queryPair, { minLength: 1, maxLength: 6 }) },
    // the same key several times
    {
      weight: 1,
      arbitrary: queryPair.chain(([key]) =>
        fc
          .array(queryValue(key), { minLength: 2, maxLength: 12 })
          .map((values) => values.map((v): QueryPair => [key, v])),
      ),
    },
  ),
  encoding: fc.constantFrom<'encoded' | 'raw'>('encoded', 'encoded', 'raw'),
});

export function renderQuery(q: QuerySpec | undefined): string {
  if (!q || q.pairs.length === 0) return '';
  const enc = (t: Text) => (q.encoding === 'raw' ? textOf(t) : encodeURIComponent(wellFormed(textOf(t))));
  return `?${q.pairs.map(([k, v]) => `${enc(k)}=${enc(v)}`).join('&')}`;
}

// ---------------------------------------------------------------------------------------------------------
// Headers

/** What Node's fetch puts on the wire: HTAB, visible ASCII, space and Latin-1 (no CR, LF, NUL or DEL). */
export const SENDABLE_HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

const headerUnit = fc
  .oneof(
    { weight: 6, arbitrary: fc.integer({ min: 0x20, max: 0x7e }) },
    { weight: 1, arbitrary: fc.integer({ min: 0x80, max: 0xff }) },
    { weight: 1, arbitrary: fc.constant(0x09) },
  )
  .map((c) => String.fromCharCode(c));

/** Header values the client can send at all, hostile within that. */
export const headerText: fc.Arbitrary<Text> = fc.oneof(
  { weight: 3, arbitrary: fc.string({ unit: headerUnit, maxLength: 40 }) },
  { weight: 2, arbitrary: fc.constantFrom(...HOSTILE_STRINGS.filter((s) => SENDABLE_HEADER_VALUE.test(s))) },
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.constantFrom('a', 'Z', '-', 'é', ' ', '\t', '9'), fc.constantFrom(100, 255, 256, 300, 600, 2000))
      .map(([u, n]) => new Repeat(u, n)),
  },
);

export const idempotencyKeyArb: fc.Arbitrary<Text> = fc.oneof(
  fc.constantFrom('', ' ', 'k', 'retry-1', 'é', 'clé', '\t', 'a\tb', 'with space', '"quoted"'),
  fc.constantFrom(254, 255, 256, 300).map((n) => new Repeat('k', n)),
  fc.string({
    unit: fc.integer({ min: 0x21, max: 0x7e }).map((c) => String.fromCharCode(c)),
    minLength: 1,
    maxLength: 40,
  }),
  headerText,
);

export const requestIdArb: fc.Arbitrary<Text> = fc.oneof(
  fc.uuid(),
  fc.stringMatching(/^[A-Za-z0-9-]{8,64}$/),
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a log4shell probe, sent as the literal text it is
  fc.constantFrom('', ' ', '<script>', 'a b', 'x'.repeat(129), 'id,with,commas', '../../etc', 'é', '${jndi:x}'),
  headerText,
);

const hex = (n: number) => fc.string({ unit: fc.constantFrom(...'0123456789abcdef'), minLength: n, maxLength: n });

export const traceparentArb: fc.Arbitrary<Text> = fc.oneof(
  fc.tuple(hex(32), hex(16)).map(([t, s]) => `00-${t}-${s}-01`),
  fc.tuple(hex(32), hex(16)).map(([t, s]) => `00-${t.toUpperCase()}-${s}-01`),
  fc.tuple(hex(31), hex(16)).map(([t, s]) => `00-${t}-${s}-01`),
  fc.constantFrom(
    '00-00000000000000000000000000000000-0000000000000000-00',
    `ff-${'a'.repeat(32)}-${'b'.repeat(16)}-01`,
    '00--' + '-01',
    '00',
  ),
  headerText,
);

export const breakGlassReasonArb: fc.Arbitrary<Text> = fc.oneof(
  fc.constantFrom('', ' ', '\t', 'incident INC-1234', 'é'),
  fc.constantFrom(500, 501, 2000).map((n) => new Repeat('r', n)),
  headerText,
);

export const contentEncodingArb = fc.constantFrom('gzip', 'deflate', 'br', 'identity', 'bogus', 'gzip, gzip', '');

/** Names of headers a client might add, with values to match. */
export const extraHeaderArb: fc.Arbitrary<[string, Text]> = fc.tuple(
  fc.oneof(
    fc.constantFrom(
      'accept',
      'accept-language',
      'accept-charset',
      'x-forwarded-for',
      'x-forwarded-proto',
      'x-forwarded-host',
      'x-real-ip',
      'forwarded',
      'origin',
      'referer',
      'cookie',
      'x-http-method-override',
      'x-original-url',
      'x-rewrite-url',
      'if-none-match',
      'if-match',
      'range',
      'prefer',
      'x-hcp-project',
      'x-debug',
    ),
    fc.stringMatching(/^x-[a-z0-9-]{1,20}$/),
  ),
  headerText,
);

// ---------------------------------------------------------------------------------------------------------
// Bodies

/** A body: JSON of a value, raw text, raw bytes, or a deeply nested document built at send time. */
export type BodySpec =
  | { kind: 'json'; value: unknown }
  | { kind: 'text'; text: Text }
  | { kind: 'bytes'; bytes: Uint8Array }
  | { kind: 'deep'; depth: number; shape: 'array' | 'object'; under?: string };

export interface BodyRequest {
  body: BodySpec;
  /** null: no Content-Type header at all. */
  contentType: string | null;
  contentEncoding?: string;
}

export function renderBody(b: BodySpec): string | Uint8Array {
  switch (b.kind) {
    case 'json':
      return JSON.stringify(b.value) ?? '';
    case 'text':
      return textOf(b.text);
    case 'bytes':
      return b.bytes;
    case 'deep': {
      const nested =
        b.shape === 'array'
          ? `${'['.repeat(b.depth)}${']'.repeat(b.depth)}`
          : `${'{"a":'.repeat(b.depth)}1${'}'.repeat(b.depth)}`;
      return b.under === undefined ? nested : `{${JSON.stringify(b.under)}:${nested}}`;
    }
  }
}

/** An object with a literal own `__proto__` (or other) key, as JSON.parse would build it. */
export function withOwnKey(target: Record<string, unknown>, key: string, value: unknown): Record<string, unknown> {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  return target;
}

/** Values of the wrong type for about any field. */
export const wrongType: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(null, true, false, 0, -1, 1.5, 1e308, -0, '', ' ', '0', 'true', [], {}, [null], { '': '' }),
  fc.constantFrom(...HOSTILE_STRINGS),
  fc.integer(),
  fc.double(),
  fc.string({ unit: utf16Unit, maxLength: 20 }),
  fc.constantFrom(64, 65, 256, 8193, 70_000, 300_000).map((n) => new Repeat('a', n)),
  fc.array(fc.jsonValue({ maxDepth: 1 }), { maxLength: 5 }),
  fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 1 }), { maxKeys: 5 }),
);

/** Values storage and logs choke on: NUL and other controls, lone surrogates, injection strings. */
const hostileStringValue: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: controlText },
  { weight: 1, arbitrary: fc.string({ unit: utf16Unit, maxLength: 12 }) },
  { weight: 1, arbitrary: fc.constantFrom(...HOSTILE_STRINGS) },
);

/** A map a validator of string maps accepts (valid keys, string values) whose values are hostile. */
const hostileValuedMap: fc.Arbitrary<unknown> = fc.dictionary(
  fc.stringMatching(/^[a-z][a-z0-9_./-]{0,10}$/),
  hostileStringValue,
  { minKeys: 1, maxKeys: 3 },
);

/** String maps (tags, metadata): hostile values, limits, wrong keys and types. */
const stringMapArb: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: hostileValuedMap },
  {
    weight: 3,
    arbitrary: fc.dictionary(
      fc.oneof(
        { weight: 4, arbitrary: fc.stringMatching(/^[a-z][a-z0-9_./-]{0,10}$/) },
        { weight: 1, arbitrary: fc.constantFrom('-bad', '', ' ', '__proto__', 'constructor', 'é') },
        { weight: 1, arbitrary: fc.string({ maxLength: 70 }) },
      ),
      fc.oneof(
        { weight: 2, arbitrary: fc.string({ maxLength: 12 }) },
        { weight: 2, arbitrary: controlText },
        { weight: 1, arbitrary: fc.string({ unit: utf16Unit, maxLength: 12 }) },
        { weight: 1, arbitrary: fc.constantFrom(...HOSTILE_STRINGS) },
        { weight: 1, arbitrary: wrongType },
      ),
      { maxKeys: 4 },
    ),
  },
  fc.constantFrom(50, 51, 100, 101, 1000).map((n) => new ManyEntries(n)),
  fc.constantFrom(255, 256, 1024, 1025).map((n) => ({ env: new Repeat('v', n) })),
  fc.constantFrom(63, 64, 128, 129).map((n) => ({ [`k${'k'.repeat(n - 1)}`]: 'v' })),
  wrongType,
);

const sshKeyArb: fc.Arbitrary<unknown> = fc.oneof(
  fc.array(
    fc.oneof(
      fc.constantFrom(
        'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl user@host',
        'ssh-rsa AAAA',
        'not a key',
        '',
      ),
      fc
        .oneof(controlText, fc.string({ unit: utf16Unit, maxLength: 16 }))
        .map((comment) => `ssh-ed25519 AAAAC3Nz ${comment}`),
      fc.constant(new Repeat('A', 9000)),
      wrongType,
    ),
    { maxLength: 3 },
  ),
  fc.constant(Array.from({ length: 21 }, () => 'ssh-ed25519 AAAA')),
  wrongType,
);

const userDataArb: fc.Arbitrary<unknown> = fc.oneof(
  fc.base64String({ maxLength: 64 }),
  fc.constantFrom('', '====', 'not base64!', 'aGVsbG8', 'aGVsbG8=\n'),
  fc.constantFrom(65_536, 87_384, 200_000).map((n) => new Repeat('A', n - (n % 4))),
  wrongType,
);

/** Known field names of the API's request bodies, with a valid value when one is known. */
export interface BodyFieldsContext {
  imageId: string;
  flavorId: string;
  zone: string;
  uuids: readonly string[];
}

/**
 * Objects mixing fields of the API's bodies (valid values, near-valid values, wrong types) with unknown
 * and prototype-polluting keys; and the same wrapped in an array.
 */
export function fieldMixArb(ctx: BodyFieldsContext): fc.Arbitrary<unknown> {
  const either = (valid: fc.Arbitrary<unknown>, weightValid = 3) =>
    fc.oneof({ weight: weightValid, arbitrary: valid }, { weight: 1, arbitrary: wrongType });
  const name = fc.oneof(
    fc.stringMatching(/^[a-z][a-z0-9-]{0,20}[a-z0-9]$/),
    fc.constantFrom('web-1', '-bad', 'bad-', 'a_b', 'a.b', 'ÄÖÜ'),
    fc.constant(new Repeat('n', 64)),
  );
  const uuid = fc.oneof(fc.constantFrom(...ctx.uuids), fc.uuid());
  const fields = {
    name: either(name),
    zone: either(fc.oneof(fc.constant(ctx.zone), fc.constantFrom('nowhere', 'LOCAL', 'local '))),
    image_id: either(fc.oneof(fc.constant(ctx.imageId), uuid)),
    flavor_id: either(fc.oneof(fc.constant(ctx.flavorId), uuid)),
    tags: either(stringMapArb, 1),
    metadata: either(stringMapArb, 1),
    ssh_keys: sshKeyArb,
    user_data: userDataArb,
    power_on: either(fc.boolean()),
    force: either(fc.boolean()),
    type: either(fc.constantFrom('vnc', 'spice', 'webconsole', 'rdp', 'simulator', 'proxmox', 'telnet')),
    // fields of the ops bodies
    provider_id: either(uuid),
    cluster_ids: either(fc.array(uuid, { maxLength: 3 })),
    policy: either(fc.constantFrom('spread', 'pack', 'random')),
    endpoint: either(
      fc.constantFrom('https://127.0.0.1:8006', 'http://[::1]', 'file:///etc/passwd', 'javascript:alert(1)'),
    ),
    credentials: either(fc.dictionary(fc.string({ maxLength: 8 }), fc.string({ maxLength: 8 }), { maxKeys: 3 })),
    settings: either(fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 })),
    capacity: either(
      fc.record({ vcpus: fc.integer(), ram_mb: fc.integer(), disk_gb: fc.integer() }, { requiredKeys: [] }),
    ),
    visibility: either(fc.constantFrom('public', 'private', 'secret')),
    os: either(fc.constantFrom('linux', 'windows')),
    vcpus: either(fc.integer({ min: -2, max: 1_000_000 })),
    ram_mb: either(fc.integer({ min: -2, max: 1 << 30 })),
    disk_gb: either(fc.integer({ min: -2, max: 1 << 30 })),
    instances: either(fc.integer({ min: -2, max: 1_000_000 })),
    min_disk_gb: either(fc.integer({ min: -2, max: 1 << 20 })),
    min_ram_mb: either(fc.integer({ min: -2, max: 1 << 20 })),
    provider_refs: either(fc.dictionary(fc.uuid(), fc.string({ maxLength: 12 }), { maxKeys: 2 })),
    id: either(fc.oneof(fc.constant(ctx.zone), fc.constantFrom(...HOSTILE_STRINGS))),
  };
  const hostileKeys = fc.array(
    fc.tuple(
      fc.oneof(
        fc.constantFrom(
          '__proto__',
          'constructor',
          'prototype',
          'status',
          'id',
          'project_id',
          'created_at',
          'isAdmin',
          '',
        ),
        fc.string({ maxLength: 10 }),
      ),
      fc.oneof(
        wrongType,
        fc.constant({ isAdmin: true, polluted: 'yes' }),
        fc.constant({ prototype: { polluted: 'yes' } }),
      ),
    ),
    {
      maxLength: 3,
    },
  );
  const object = fc.tuple(fc.record(fields, { requiredKeys: [] }), hostileKeys).map(([base, extra]) => {
    const target: Record<string, unknown> = { ...base };
    for (const [k, v] of extra) withOwnKey(target, k, v);
    return target;
  });
  return fc.oneof({ weight: 6, arbitrary: object }, { weight: 1, arbitrary: object.map((o) => [o]) });
}

/** A valid VM create body with one (sometimes two) fields twisted: the input that gets furthest in. */
export function nearlyValidCreateArb(ctx: BodyFieldsContext): fc.Arbitrary<unknown> {
  const valid = fc.record({
    name: fc.stringMatching(/^[a-z][a-z0-9-]{0,20}[a-z0-9]$/),
    zone: fc.constant(ctx.zone),
    image_id: fc.constant(ctx.imageId),
    flavor_id: fc.constant(ctx.flavorId),
    power_on: fc.boolean(),
  });
  const twist = fc.oneof(
    { weight: 3, arbitrary: fc.record({ tags: stringMapArb }) },
    { weight: 3, arbitrary: fc.record({ metadata: stringMapArb }) },
    { weight: 2, arbitrary: fc.record({ ssh_keys: sshKeyArb }) },
    fc.record({ user_data: userDataArb }),
    fc.record({ name: wrongType }),
    fc.record({ image_id: fc.oneof(fc.uuid(), wrongType) }),
    fc.record({ power_on: wrongType }),
    fc.constant({}),
  );
  const maybeSecond = fc.oneof({ weight: 2, arbitrary: fc.constant({}) }, { weight: 1, arbitrary: twist });
  return fc.tuple(valid, twist, maybeSecond).map(([v, a, b]) => ({ ...v, ...a, ...b }));
}

/** A body valid for a tags/metadata update with its values twisted. */
export const labelsUpdateArb: fc.Arbitrary<unknown> = fc.record(
  { tags: stringMapArb, metadata: stringMapArb },
  { requiredKeys: [] },
);

const JUNK_JSON_TEXTS = [
  '',
  ' ',
  '{',
  '}',
  '{"a":',
  '{"a":1,}',
  "{'a':1}",
  '{a:1}',
  '[1,2',
  '{}{}',
  '{} []',
  'null',
  'true',
  '0',
  '-',
  '1e999999',
  '"string"',
  'NaN',
  'undefined',
  '\ufeff{}',
  '{"name":"\\ud800"}',
  '{"name":"\\u0000"}',
  '{"tags":{"a":"\\u0000"}}',
  '{"a":"\\x41"}',
  '{"a":1}\u0000',
  '{"__proto__":{"isAdmin":true}}',
  '{"constructor":{"prototype":{"isAdmin":true}}}',
  '{"a":1,"a":2}',
  '<?xml version="1.0"?><vm/>',
  'name=web&zone=local',
  '--x\r\nContent-Disposition: form-data; name="a"\r\n\r\n1\r\n--x--',
];

export const CONTENT_TYPES = [
  'application/json',
  'application/json; charset=utf-8',
  'APPLICATION/JSON',
  'application/json; charset=utf-16',
  'application/json; charset=latin1',
  'application/json; charset=bogus',
  'application/json; charset="',
  'application/json;;;',
  'application/json, text/plain',
  'application/merge-patch+json',
  'application/vnd.api+json',
  'application/problem+json',
  'text/plain',
  'text/html',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/xml',
  'application/octet-stream',
  '*/*',
  'json',
  '',
];

/** What a route's body is meant to be (API.md's request bodies), so most bodies get past validation. */
export type BodyFocus =
  | 'vm-create'
  | 'vm-labels'
  | 'vm-action'
  | 'provider'
  | 'cluster'
  | 'zone'
  | 'image'
  | 'flavor'
  | 'quotas'
  | 'other';

const validName = fc.stringMatching(/^[a-z][a-z0-9-]{0,14}[a-z0-9]$/);
const count = (max: number) => fc.integer({ min: 1, max });

/** A valid body of each kind (as far as the test can know one), to be twisted in one field. */
function validBodyArb(focus: BodyFocus, ctx: BodyFieldsContext): fc.Arbitrary<Record<string, unknown>> {
  const id = fc.constantFrom(...ctx.uuids);
  switch (focus) {
    case 'vm-create':
      return fc.record({
        name: validName,
        zone: fc.constant(ctx.zone),
        image_id: fc.constant(ctx.imageId),
        flavor_id: fc.constant(ctx.flavorId),
        power_on: fc.boolean(),
      });
    case 'vm-labels':
      return fc.record(
        {
          tags: fc.dictionary(validName, fc.string({ maxLength: 8 }), { maxKeys: 2 }),
          metadata: fc.dictionary(validName, fc.string({ maxLength: 8 }), { maxKeys: 2 }),
        },
        { requiredKeys: [] },
      );
    case 'vm-action':
      return fc.record({ force: fc.boolean() }, { requiredKeys: [] });
    case 'provider':
      return fc.record(
        { name: validName, type: fc.constant('simulator'), settings: fc.constant({}) },
        { requiredKeys: ['name', 'type'] },
      );
    case 'cluster':
      return fc.record(
        {
          name: validName,
          provider_id: id,
          capacity: fc.record({ vcpus: count(512), ram_mb: count(1 << 20), disk_gb: count(1 << 16) }),
          enabled: fc.boolean(),
        },
        { requiredKeys: ['name', 'provider_id'] },
      );
    case 'zone':
      return fc.record({
        id: validName,
        name: validName,
        cluster_ids: fc.array(id, { maxLength: 2 }),
        policy: fc.constantFrom('spread', 'pack'),
      });
    case 'image':
      return fc.record({
        name: validName,
        os: fc.constantFrom('linux', 'windows'),
        min_disk_gb: count(100),
        min_ram_mb: count(8192),
        visibility: fc.constantFrom('public', 'private'),
        provider_refs: fc.dictionary(id, validName, { maxKeys: 1 }),
      });
    case 'flavor':
      return fc.record({ name: validName, vcpus: count(64), ram_mb: count(1 << 18), disk_gb: count(4096) });
    case 'quotas':
      return fc.record({
        instances: count(1000),
        vcpus: count(1 << 12),
        ram_mb: count(1 << 24),
        disk_gb: count(1 << 20),
      });
    case 'other':
      return fc.constant({});
  }
}

/** A value to put in place of a valid one: storage-hostile text, the valid text with a control character in it, limits, wrong types. */
const twistValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 3, arbitrary: hostileStringValue },
  { weight: 2, arbitrary: fc.tuple(validName, controlText).map(([v, c]) => `${v}${c}`) },
  { weight: 1, arbitrary: fc.constantFrom(0, -1, 2 ** 31, 2 ** 53, 1e308, 0.5, new Repeat('a', 300)) },
  { weight: 1, arbitrary: stringMapArb },
  { weight: 1, arbitrary: wrongType },
);

/** A valid body with one field (or one nested string-map value) replaced by a twisted value, or left valid. */
export function nearlyValidBodyArb(focus: BodyFocus, ctx: BodyFieldsContext): fc.Arbitrary<unknown> {
  // The VM bodies have their own twisted generators (string maps, ssh keys, user data).
  const base =
    focus === 'vm-create'
      ? nearlyValidCreateArb(ctx)
      : focus === 'vm-labels'
        ? labelsUpdateArb
        : validBodyArb(focus, ctx);
  if (focus === 'vm-create' || focus === 'vm-labels') return base;
  return fc.oneof(
    { weight: 1, arbitrary: base },
    {
      weight: 4,
      // Mostly one of the body's own fields twisted; sometimes an extra, unknown field instead.
      arbitrary: fc
        .tuple(
          validBodyArb(focus, ctx),
          fc.nat(),
          twistValue,
          fc.oneof({ weight: 5, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: validName }),
        )
        .map(([body, i, value, extraKey]) => {
          const keys = Object.keys(body);
          if (keys.length === 0 || extraKey !== undefined) return { ...body, [extraKey ?? 'x']: value };
          return { ...body, [keys[i % keys.length]]: value };
        }),
    },
  );
}

/** Bodies shaped like the API's: the route's own body nearly valid, plus field mixes, sent as JSON. */
export function fieldBodySpecArb(ctx: BodyFieldsContext, focus: BodyFocus = 'other'): fc.Arbitrary<BodySpec> {
  const others: Array<fc.WeightedArbitrary<unknown>> = [
    { weight: 3, arbitrary: fieldMixArb(ctx) },
    { weight: 1, arbitrary: nearlyValidCreateArb(ctx) },
    { weight: 1, arbitrary: labelsUpdateArb },
    { weight: 1, arbitrary: fc.record({ force: fc.oneof(fc.boolean(), wrongType) }, { requiredKeys: [] }) },
  ];
  const focused: Array<fc.WeightedArbitrary<unknown>> =
    focus === 'other' ? [] : [{ weight: 6, arbitrary: nearlyValidBodyArb(focus, ctx) }];
  return fc.oneof(...focused, ...others).map((value): BodySpec => ({ kind: 'json', value }));
}

/** Bodies of any shape: random JSON and values, junk text, raw bytes, deep nesting, huge strings. */
export const shapeBodySpecArb: fc.Arbitrary<BodySpec> = fc.oneof(
  { weight: 2, arbitrary: fc.json({ maxDepth: 4 }).map((text): BodySpec => ({ kind: 'text', text })) },
  {
    weight: 2,
    arbitrary: fc
      .anything({
        maxDepth: 3,
        withObjectString: true,
        withNullPrototype: true,
        withSparseArray: true,
        withBoxedValues: true,
        withDate: true,
        withMap: true,
        withSet: true,
      })
      .map((value): BodySpec => ({ kind: 'json', value })),
  },
  { weight: 2, arbitrary: fc.constantFrom(...JUNK_JSON_TEXTS).map((text): BodySpec => ({ kind: 'text', text })) },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 64 }).map((bytes): BodySpec => ({ kind: 'bytes', bytes })) },
  {
    weight: 2,
    arbitrary: fc.record(
      {
        kind: fc.constant('deep' as const),
        depth: fc.integer({ min: 1, max: 20_000 }),
        shape: fc.constantFrom<'array' | 'object'>('array', 'object'),
        under: fc.option(fc.constantFrom('force', 'tags', 'metadata', 'name', 'settings', 'x'), { nil: undefined }),
      },
      { requiredKeys: ['kind', 'depth', 'shape'] },
    ),
  },
  {
    weight: 1,
    arbitrary: fc
      .tuple(
        fc.constantFrom('name', 'user_data', 'x', 'tags'),
        fc.constantFrom(1024, 65_536, 262_000, 262_145, 300_000, 2_000_000),
      )
      .map(
        ([field, n]): BodySpec => ({
          kind: 'json',
          value: field === 'tags' ? { tags: { a: new Repeat('v', n) } } : { [field]: new Repeat('a', n) },
        }),
      ),
  },
);

/** A body as JSON (`json`), or with any content type and sometimes a content encoding it does not have (`any`). */
export function bodyRequestArb(body: fc.Arbitrary<BodySpec>, contentTypes: 'json' | 'any'): fc.Arbitrary<BodyRequest> {
  if (contentTypes === 'json') return body.map((b): BodyRequest => ({ body: b, contentType: 'application/json' }));
  return fc.record(
    {
      body,
      contentType: fc.oneof(
        { weight: 5, arbitrary: fc.constant<string | null>('application/json') },
        { weight: 4, arbitrary: fc.constantFrom<string | null>(...CONTENT_TYPES) },
        { weight: 1, arbitrary: fc.constant<string | null>(null) },
      ),
      contentEncoding: contentEncodingArb,
    },
    { requiredKeys: ['body', 'contentType'] },
  );
}

/** Any body: fields or shapes, any content type. */
export function anyBodyRequestArb(ctx: BodyFieldsContext): fc.Arbitrary<BodyRequest> {
  return bodyRequestArb(fc.oneof(fieldBodySpecArb(ctx), shapeBodySpecArb), 'any');
}
