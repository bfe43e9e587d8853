/**
 * Request validation against Proxmox's published API schema (`pve-api-subset.json`, taken from
 * pve-docs' apidata.js), with the rules and messages of Proxmox's own validator (PVE::JSONSchema):
 * unknown parameter, missing required parameter, type (booleans only 0/1 in form encoding), named
 * formats (pve-vmid, pve-node, pve-storage-id, dns-name, urlencoded, pve-tag-list, ...), property
 * strings (`net0: virtio,bridge=vmbr0`), pattern, enum, minimum/maximum, maxLength, `requires`.
 * The answer for a failure is HTTP 400 "Parameter verification failed." with `errors` per parameter.
 */
import fs from 'node:fs';
import path from 'node:path';

export interface PveProperty {
  type?: string | string[];
  optional?: number | boolean;
  format?: string | Record<string, PveProperty>;
  pattern?: string;
  enum?: string[];
  minimum?: number | string;
  maximum?: number | string;
  maxLength?: number;
  minLength?: number;
  requires?: string | Record<string, unknown>;
  default_key?: number | boolean;
  alias?: string;
  keyAlias?: string;
  properties?: Record<string, PveProperty>;
  items?: PveProperty;
  additionalProperties?: number | boolean | PveProperty;
  [key: string]: unknown;
}

export interface PveEndpoint {
  path: string;
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  name: string;
  allowtoken?: number;
  protected?: number;
  proxyto?: string;
  parameters: { additionalProperties?: number; properties?: Record<string, PveProperty> };
  returns?: PveProperty;
}

interface PveSubsetFile {
  source?: Record<string, unknown>;
  endpoints: PveEndpoint[];
}

/** Where the schema lives: beside this file, so the simulator needs nothing outside the repository. */
export function defaultSchemaFile(): string {
  return process.env.PVE_API_SUBSET ?? path.join(__dirname, 'pve-api-subset.json');
}

// ---------------------------------------------------------------------------------------------------
// Named formats (PVE::JSONSchema::register_format and friends), with Proxmox's messages.

type Validator = (value: string) => void;

const IPV4 = /^(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(?:25[0-5]|2[0-4]\d|1?\d?\d)$/;
const isIpv6 = (v: string): boolean => {
  if (!/^[0-9a-fA-F:.]+$/.test(v) || !v.includes(':')) return false;
  const double = v.split('::');
  if (double.length > 2) return false;
  const groups = v.split(':').filter((g) => g !== '');
  const tail = groups[groups.length - 1] ?? '';
  const hasV4 = IPV4.test(tail);
  const count = groups.length + (hasV4 ? 1 : 0);
  if (!groups.every((g, i) => /^[0-9a-fA-F]{1,4}$/.test(g) || (hasV4 && i === groups.length - 1))) return false;
  return double.length === 2 ? count < 8 : count === 8;
};
const DNS_NAME = /^(([a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?)\.)*([a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?)$/;

const fail = (message: string): never => {
  throw new Error(`${message}\n`);
};

const cidr = (v: string, ipv6: boolean): boolean => {
  const m = /^(.*)\/(\d+)$/.exec(v);
  if (!m) return false;
  const bits = Number(m[2]);
  return ipv6 ? isIpv6(m[1]) && bits > 7 && bits <= 128 : IPV4.test(m[1]) && bits > 7 && bits <= 32;
};

const NAMED: Record<string, Validator> = {
  string: () => undefined,
  'pve-vmid': (v) => (/^[1-9][0-9]{2,8}$/.test(v) ? undefined : fail('value does not look like a valid VM ID')),
  'pve-node': (v) =>
    /^([a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?)$/.test(v)
      ? undefined
      : fail('value does not look like a valid node name'),
  'pve-storage-id': (v) =>
    /^[a-z][a-z0-9\-_.]*[a-z0-9]$/i.test(v) ? undefined : fail(`storage ID '${v}' contains illegal characters`),
  'pve-bridge-id': (v) => (/^[-_.\w\d]+$/.test(v) ? undefined : fail(`invalid bridge ID '${v}'`)),
  'pve-configid': (v) => (/^[a-z][a-z0-9_-]+$/i.test(v) ? undefined : fail(`invalid configuration ID '${v}'`)),
  'pve-poolid': (v) =>
    /^[A-Za-z0-9_][-A-Za-z0-9_/]*$/.test(v) ? undefined : fail(`pool name '${v}' contains illegal characters`),
  'pve-realm': (v) =>
    /^[A-Za-z][A-Za-z0-9.\-_]+$/.test(v) ? undefined : fail(`realm '${v}' contains illegal characters`),
  'pve-tag': (v) => (/^[a-z0-9_][a-z0-9_\-+.]*$/i.test(v) ? undefined : fail('invalid characters in tag')),
  urlencoded: (v) => (/^[-%a-zA-Z0-9_.!~*'()]*$/.test(v) ? undefined : fail(`invalid urlencoded string: ${v}`)),
  'dns-name': (v) => (DNS_NAME.test(v) ? undefined : fail('value does not look like a valid DNS name')),
  ipv4: (v) => (IPV4.test(v) ? undefined : fail('value does not look like a valid IPv4 address')),
  ipv6: (v) => (isIpv6(v) ? undefined : fail('value does not look like a valid IPv6 address')),
  ip: (v) => (IPV4.test(v) || isIpv6(v) ? undefined : fail('value does not look like a valid IP address')),
  address: (v) =>
    IPV4.test(v) || isIpv6(v) || DNS_NAME.test(v) ? undefined : fail(`value does not look like a valid address: ${v}`),
  CIDRv4: (v) => (cidr(v, false) ? undefined : fail('value does not look like a valid IPv4 CIDR network')),
  CIDRv6: (v) => (cidr(v, true) ? undefined : fail('value does not look like a valid IPv6 CIDR network')),
  CIDR: (v) => (cidr(v, false) || cidr(v, true) ? undefined : fail('value does not look like a valid CIDR network')),
  'pve-ipv4-config': (v) =>
    /^(?:dhcp|manual)$/.test(v) || cidr(v, false)
      ? undefined
      : fail('value does not look like a valid ipv4 network configuration'),
  'pve-ipv6-config': (v) =>
    /^(?:auto|dhcp|manual)$/.test(v) || cidr(v, true)
      ? undefined
      : fail('value does not look like a valid ipv6 network configuration'),
  'mac-addr': (v) =>
    /^[a-f0-9][02468ace](?::[a-f0-9]{2}){5}$/i.test(v)
      ? undefined
      : fail('value does not look like a valid unicast MAC address'),
  'disk-size': (v) =>
    /^(\d+(\.\d+)?)([KMGT])?$/.test(v) ? undefined : fail(`value does not look like a valid disk size: ${v}`),
};

/** Hash-based named formats (property strings) that the subset refers to by name. */
const NAMED_PROPERTY_STRINGS: Record<string, Record<string, PveProperty>> = {
  'pve-qm-ipconfig': {
    ip: { type: 'string', format: 'pve-ipv4-config', optional: 1 },
    gw: { type: 'string', format: 'ipv4', optional: 1 },
    ip6: { type: 'string', format: 'pve-ipv6-config', optional: 1 },
    gw6: { type: 'string', format: 'ipv6', optional: 1 },
  },
};

/** PVE::Tools::split_list. */
function splitList(text: string): string[] {
  if (text.includes('\0')) return text.split('\0');
  return text
    .replace(/[,;]/g, ' ')
    .trim()
    .split(/\s+/)
    .filter((s) => s !== '');
}

function parseBoolean(v: string): string | undefined {
  if (/^(1|on|yes|true)$/i.test(v)) return '1';
  if (/^(0|off|no|false)$/i.test(v)) return '0';
  return undefined;
}

class FormatError extends Error {
  constructor(readonly errors: Record<string, string>) {
    super('format error\n');
  }
}

/** PVE::JSONSchema::parse_property_string, then check_object of the parts. */
function parsePropertyString(format: Record<string, PveProperty>, data: string, at: string): void {
  const res: Record<string, string> = {};
  let defaultKey: string | undefined;
  for (const part of data.split(',')) {
    if (/^\s*$/.test(part)) continue;
    const kv = /^([^=]+)=(.+)$/.exec(part);
    if (kv) {
      let [, k, v] = kv;
      if (res[k] !== undefined) fail(`duplicate key in comma-separated list property: ${k}`);
      let schema = format[k];
      if (schema?.alias) {
        if (schema.keyAlias) {
          if (res[schema.keyAlias] !== undefined) fail(`key alias '${schema.keyAlias}' is already defined`);
          res[schema.keyAlias] = k;
        }
        k = schema.alias;
        schema = format[k];
      }
      if (!schema) fail(`invalid key in comma-separated list property: ${k}`);
      if (schema.type === 'boolean') v = parseBoolean(v) ?? v;
      res[k] = v;
    } else if (!part.includes('=')) {
      if (defaultKey) fail(`duplicate key in comma-separated list property: ${defaultKey}`);
      for (const [key, schema] of Object.entries(format)) {
        if (schema.default_key) {
          defaultKey = key;
          if (!res[key]) {
            res[key] = part;
            break;
          }
          fail(`duplicate key in comma-separated list property: ${key}`);
        }
      }
      if (!defaultKey) fail('value without key, but schema does not define a default key');
    } else {
      fail('missing key in comma-separated list property');
    }
  }
  const errors: Record<string, string> = {};
  checkObject(at, format, res, false, errors, 'form');
  if (Object.keys(errors).length > 0) throw new FormatError(errors);
}

function checkFormat(format: string | Record<string, PveProperty>, value: string, at: string): void {
  if (typeof format === 'object') {
    parsePropertyString(format, value, at);
    return;
  }
  if (format === 'regex') return;
  const m = /^(.*?)(?:-(list|opt))?$/.exec(format)!;
  const [, name, kind] = m;
  const hash = NAMED_PROPERTY_STRINGS[name];
  if (hash) {
    parsePropertyString(hash, value, at);
    return;
  }
  const validator = NAMED[name];
  // Formats this simulator has no validator for are accepted, as if they were plain strings.
  if (!validator) return;
  if (kind === 'list') for (const item of splitList(value)) validator(item);
  else if (kind === 'opt') {
    if (value) validator(value);
  } else validator(value);
}

// ---------------------------------------------------------------------------------------------------
// check_prop / check_object

const isInteger = (v: string) => /^[+-]?\d+$/.test(v);
const isNumber = (v: string) => /^[+-]?(\d+\.\d+|\d+\.|\.\d+|\d+)([eE][+-]?\d+)?$/.test(v);
const regexCache = new Map<string, RegExp | null>();

function anchored(pattern: string): RegExp | null {
  if (!regexCache.has(pattern)) {
    try {
      regexCache.set(pattern, new RegExp(`^(?:${pattern})$`));
    } catch {
      regexCache.set(pattern, null);
    }
  }
  return regexCache.get(pattern)!;
}

function addError(errors: Record<string, string>, at: string, message: string): void {
  const key = at || '_root';
  errors[key] = errors[key] ? `${errors[key]}\n${message}` : message;
}

type Encoding = 'form' | 'json';

function checkType(
  at: string,
  type: string,
  value: unknown,
  errors: Record<string, string>,
  encoding: Encoding,
): boolean {
  if (type === 'any') return true;
  if (Array.isArray(value) || (value !== null && typeof value === 'object')) {
    if (type === 'array' && Array.isArray(value)) return true;
    if (type === 'object' && !Array.isArray(value)) return true;
    addError(errors, at, `type check ('${type}') failed - got ${Array.isArray(value) ? 'ARRAY' : 'HASH'}`);
    return false;
  }
  if (type === 'array' || type === 'object') {
    addError(errors, at, `type check ('${type}') failed`);
    return false;
  }
  if (type === 'string') return true;
  if (typeof value === 'boolean') {
    // JSON true/false are booleans to Proxmox; form encoding has no such thing.
    if (type === 'boolean' && encoding === 'json') return true;
    addError(errors, at, `type check ('${type}') failed - got JSON::PP::Boolean`);
    return false;
  }
  const text = String(value);
  if (type === 'boolean') {
    if (text === '1' || text === '0') return true;
    addError(errors, at, `type check ('boolean') failed - got '${text}'`);
    return false;
  }
  if (type === 'integer' && !isInteger(text)) {
    addError(errors, at, `type check ('integer') failed - got '${text}'`);
    return false;
  }
  if (type === 'number' && !isNumber(text)) {
    addError(errors, at, `type check ('number') failed - got '${text}'`);
    return false;
  }
  return true;
}

function checkProp(
  value: unknown,
  schema: PveProperty,
  at: string,
  errors: Record<string, string>,
  encoding: Encoding,
): void {
  if (value === undefined || value === null) {
    if (!schema.optional && !schema.alias) addError(errors, at, 'property is missing and it is not optional');
    return;
  }
  if (schema.type !== undefined) {
    const types = Array.isArray(schema.type) ? schema.type : [schema.type];
    if (types.length > 1) {
      const ok = types.some((t) => checkType(at, t, value, {}, encoding));
      if (!ok) {
        addError(errors, at, `type check ('${types.join('|')}') failed`);
        return;
      }
    } else if (!checkType(at, types[0], value, errors, encoding)) {
      return;
    }
  }
  if (Array.isArray(value) || (value !== null && typeof value === 'object')) {
    if (Array.isArray(value) && schema.items) {
      for (const [i, v] of value.entries()) checkProp(v, schema.items, `${at}[${i}]`, errors, encoding);
    }
    return;
  }
  const text = typeof value === 'boolean' ? (value ? '1' : '0') : String(value);
  if (schema.format !== undefined) {
    try {
      checkFormat(schema.format, text, at);
    } catch (err) {
      if (err instanceof FormatError) {
        const lines = Object.entries(err.errors).map(([k, v]) => `${k}: ${v}\n`);
        addError(errors, at, `invalid format - format error\n${lines.join('')}`);
      } else {
        addError(errors, at, `invalid format - ${(err as Error).message}`);
      }
      return;
    }
  }
  if (schema.pattern !== undefined) {
    const re = anchored(schema.pattern);
    if (re && !re.test(text)) {
      addError(errors, at, 'value does not match the regex pattern');
      return;
    }
  }
  if (schema.maxLength !== undefined && text.length > schema.maxLength) {
    addError(errors, at, `value may only be ${schema.maxLength} characters long`);
    return;
  }
  if (schema.minLength !== undefined && text.length < schema.minLength) {
    addError(errors, at, `value must be at least ${schema.minLength} characters long`);
    return;
  }
  if (isNumber(text)) {
    if (schema.maximum !== undefined && Number(text) > Number(schema.maximum)) {
      addError(errors, at, `value must have a maximum value of ${schema.maximum}`);
      return;
    }
    if (schema.minimum !== undefined && Number(text) < Number(schema.minimum)) {
      addError(errors, at, `value must have a minimum value of ${schema.minimum}`);
      return;
    }
  }
  if (schema.enum && !schema.enum.includes(text)) {
    addError(errors, at, `value '${text}' does not have a value in the enumeration '${schema.enum.join(', ')}'`);
  }
}

/** How many of an indexed option (`net[n]`) Proxmox has; the schema only says `[n]`. */
const INDEX_LIMITS: Record<string, number> = {
  net: 32,
  ipconfig: 32,
  scsi: 31,
  virtio: 16,
  sata: 6,
  ide: 4,
  hostpci: 16,
  usb: 14,
  serial: 4,
  parallel: 3,
  numa: 8,
  virtiofs: 10,
  unused: 256,
};

function schemaFor(properties: Record<string, PveProperty>, key: string): PveProperty | undefined {
  if (Object.hasOwn(properties, key)) return properties[key];
  const m = /^([a-z_-]+?)(\d+)$/i.exec(key);
  if (!m) return undefined;
  const indexed = properties[`${m[1]}[n]`];
  if (!indexed) return undefined;
  const limit = INDEX_LIMITS[m[1]] ?? 256;
  return Number(m[2]) < limit && String(Number(m[2])) === m[2] ? indexed : undefined;
}

function checkObject(
  at: string,
  properties: Record<string, PveProperty>,
  value: Record<string, unknown>,
  additionalProperties: boolean,
  errors: Record<string, string>,
  encoding: Encoding,
): void {
  const join = (k: string) => (at ? `${at}.${k}` : k);
  for (const [k, schema] of Object.entries(properties)) {
    if (k.endsWith('[n]')) continue;
    checkProp(value[k], schema, join(k), errors, encoding);
  }
  for (const k of Object.keys(value)) {
    const schema = schemaFor(properties, k);
    if (schema) {
      if (!Object.hasOwn(properties, k)) checkProp(value[k], schema, join(k), errors, encoding);
      if (typeof schema.requires === 'string' && value[schema.requires] === undefined) {
        addError(errors, join(schema.requires), `missing property - '${join(k)}' requires this property`);
      }
      continue;
    }
    if (!additionalProperties) {
      addError(
        errors,
        join(k),
        'property is not defined in schema and the schema does not allow additional properties',
      );
    }
  }
}

// ---------------------------------------------------------------------------------------------------

export interface MatchedEndpoint {
  endpoint: PveEndpoint;
  /** Decoded path parameters (`node`, `vmid`, `upid`, ...). */
  pathParams: Record<string, string>;
}

interface CompiledEndpoint {
  endpoint: PveEndpoint;
  regex: RegExp;
  names: string[];
  literals: number;
}

export class PveSchema {
  readonly endpoints: PveEndpoint[];
  private readonly compiled: CompiledEndpoint[];

  constructor(
    data: PveSubsetFile,
    readonly file: string,
  ) {
    if (!data || !Array.isArray(data.endpoints) || data.endpoints.length === 0) {
      throw new Error(`${file} holds no endpoints`);
    }
    this.endpoints = data.endpoints;
    this.compiled = data.endpoints.map((endpoint) => {
      const names: string[] = [];
      const source = endpoint.path
        .split('/')
        .map((segment) => {
          const m = /^\{(\w+)\}$/.exec(segment);
          if (m) {
            names.push(m[1]);
            return '([^/]+)';
          }
          return segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
        })
        .join('/');
      return {
        endpoint,
        regex: new RegExp(`^${source}$`),
        names,
        literals: endpoint.path.split('/').length - names.length,
      };
    });
  }

  /** Loads the subset; fails loudly when the file is missing, since every request depends on it. */
  static load(file: string = defaultSchemaFile()): PveSchema {
    if (!fs.existsSync(file)) {
      throw new Error(
        `Proxmox API schema not found at ${file}. The simulator validates every request against it; ` +
          'it lives in test/simulators/proxmox/ (or set PVE_API_SUBSET).',
      );
    }
    return new PveSchema(JSON.parse(fs.readFileSync(file, 'utf8')) as PveSubsetFile, file);
  }

  /** The endpoint for a method and a raw (still percent-encoded) API path, or null (HTTP 501). */
  match(method: string, rawPath: string): MatchedEndpoint | null {
    let best: { c: CompiledEndpoint; m: RegExpExecArray } | undefined;
    for (const c of this.compiled) {
      if (c.endpoint.method !== method) continue;
      const m = c.regex.exec(rawPath);
      if (m && (!best || c.literals > best.c.literals)) best = { c, m };
    }
    if (!best) return null;
    const pathParams: Record<string, string> = {};
    best.c.names.forEach((name, i) => {
      pathParams[name] = decodeURIComponent(best!.m[i + 1]);
    });
    return { endpoint: best.c.endpoint, pathParams };
  }

  /** Errors per parameter, as Proxmox reports them; empty when the parameters are valid. */
  validate(endpoint: PveEndpoint, params: Record<string, unknown>, encoding: Encoding): Record<string, string> {
    const errors: Record<string, string> = {};
    checkObject(
      '',
      endpoint.parameters.properties ?? {},
      params,
      !!endpoint.parameters.additionalProperties,
      errors,
      encoding,
    );
    return errors;
  }
}
