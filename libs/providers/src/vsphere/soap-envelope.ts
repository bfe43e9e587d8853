/**
 * vim25 SOAP, the small typed part HCP needs: request envelopes built from plain values (every text
 * escaped, so a tenant's name or tag can never change the document's structure) and answers parsed
 * into plain trees with fast-xml-parser. vim25 is order-sensitive (real vCenter checks the WSDL's
 * sequence), so objects are written in the order their fields are given.
 */
import { XMLParser } from 'fast-xml-parser';

/** A managed object reference: `<x type="VirtualMachine">vm-42</x>`. */
export interface MoRef {
  readonly type: string;
  readonly value: string;
}

/** An object written with `xsi:type` (polymorphic fields such as OptionValue, TraversalSpec). */
export interface Typed {
  readonly xsiType: string;
  readonly fields?: SoapFields;
  /** Text content instead of fields (`<value xsi:type="xsd:string">...</value>`). */
  readonly text?: string;
}

export type SoapValue = string | number | boolean | MoRef | Typed | SoapFields | SoapValue[] | undefined | null;
export type SoapFields = { readonly [name: string]: SoapValue };

const MOREF = Symbol('moref');
const TYPED = Symbol('typed');

export function moref(type: string, value: string): MoRef {
  return Object.assign(Object.create(null), { type, value, [MOREF]: true });
}

export function typed(xsiType: string, fields: SoapFields): Typed {
  return Object.assign(Object.create(null), { xsiType, fields, [TYPED]: true });
}

/** A string where the schema says xsd:anyType (an OptionValue's value). */
export function xsdString(value: string): Typed {
  return Object.assign(Object.create(null), { xsiType: 'xsd:string', text: value, [TYPED]: true });
}

export function isMoRef(v: unknown): v is MoRef {
  return !!v && typeof v === 'object' && (v as Record<symbol, unknown>)[MOREF] === true;
}

function isTyped(v: unknown): v is Typed {
  return !!v && typeof v === 'object' && (v as Record<symbol, unknown>)[TYPED] === true;
}

// Characters XML 1.0 cannot carry at all, escaped or not.
// biome-ignore lint/suspicious/noControlCharactersInRegex: these are exactly the characters to refuse
const INVALID_XML_CHARS = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/;

export class SoapEncodingError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SoapEncodingError';
  }
}

export function escapeXml(text: string): string {
  if (INVALID_XML_CHARS.test(text)) throw new SoapEncodingError('text contains a character XML cannot carry');
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&apos;')
    .replace(/\r/g, '&#13;');
}

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** One element (or one per item of an array) named `name`. */
export function element(name: string, value: SoapValue): string {
  if (!NAME.test(name)) throw new SoapEncodingError(`bad element name ${name}`);
  if (value === undefined || value === null) return '';
  if (Array.isArray(value)) return value.map((v) => element(name, v)).join('');
  if (typeof value === 'string') return `<${name}>${escapeXml(value)}</${name}>`;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new SoapEncodingError(`${name} is not a finite number`);
    return `<${name}>${String(value)}</${name}>`;
  }
  if (typeof value === 'boolean') return `<${name}>${value ? 'true' : 'false'}</${name}>`;
  if (isMoRef(value)) return `<${name} type="${escapeXml(value.type)}">${escapeXml(value.value)}</${name}>`;
  if (isTyped(value)) {
    const content = value.text !== undefined ? escapeXml(value.text) : fields(value.fields ?? {});
    return `<${name} xsi:type="${escapeXml(value.xsiType)}">${content}</${name}>`;
  }
  return `<${name}>${fields(value as SoapFields)}</${name}>`;
}

function fields(values: SoapFields): string {
  return Object.entries(values)
    .map(([k, v]) => element(k, v))
    .join('');
}

/** The whole request for `method` on `_this`, its arguments in WSDL order. */
export function requestEnvelope(method: string, self: MoRef, args: SoapFields = {}): string {
  if (!NAME.test(method)) throw new SoapEncodingError(`bad method name ${method}`);
  return (
    '<?xml version="1.0" encoding="UTF-8"?>' +
    '<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" ' +
    'xmlns:xsd="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">' +
    `<soapenv:Body><${method} xmlns="urn:vim25">${element('_this', self)}${fields(args)}</${method}>` +
    '</soapenv:Body></soapenv:Envelope>'
  );
}

/** A parsed XML node: text, or an object of child elements (`@_` attributes, `#text` for text beside them). */
export type XmlNode = string | { [key: string]: XmlNode | XmlNode[] };

const parser = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: '@_',
  // Tag prefixes go (soapenv:Body → Body); attribute prefixes stay, because `xsi:type` and a MoRef's
  // `type` both sit on a property value that is a MoRef.
  transformTagName: (name: string) => name.replace(/^[^:]*:/, ''),
  parseTagValue: false,
  parseAttributeValue: false,
  trimValues: false,
  processEntities: true,
  // Numeric character references (vcsim writes &#34; for a quote) need the entity table.
  htmlEntities: true,
});

export class SoapParseError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SoapParseError';
  }
}

/** What a SOAP answer says: a result (`returnval`, possibly absent) or a fault. */
export type SoapAnswer =
  | { kind: 'result'; returnval: XmlNode | XmlNode[] | undefined }
  | { kind: 'fault'; fault: SoapFault };

/** A vim25 fault: its type (`NotAuthenticated`, `InvalidArgument`, ...) and what it says. */
export interface SoapFault {
  type: string;
  message: string;
  /** The fault's own fields (invalidProperty, name, ...), as parsed. */
  detail?: XmlNode;
}

export function parseSoapAnswer(xml: string, method: string): SoapAnswer {
  let doc: Record<string, unknown>;
  try {
    doc = parser.parse(xml) as Record<string, unknown>;
  } catch {
    throw new SoapParseError('the answer is not XML');
  }
  const body = child(child(doc, 'Envelope'), 'Body');
  if (!body || typeof body !== 'object') throw new SoapParseError('the answer is not a SOAP envelope');
  const fault = child(body, 'Fault');
  if (fault !== undefined) return { kind: 'fault', fault: faultOf(fault) };
  const response = child(body, `${method}Response`);
  if (response === undefined) throw new SoapParseError(`the answer has no ${method}Response`);
  return {
    kind: 'result',
    returnval: (typeof response === 'object' ? child(response, 'returnval') : undefined) as
      | XmlNode
      | XmlNode[]
      | undefined,
  };
}

function faultOf(node: unknown): SoapFault {
  const faultstring = text(child(node, 'faultstring')) ?? '';
  const detail = child(node, 'detail');
  let type = '';
  let fields: XmlNode | undefined;
  if (detail && typeof detail === 'object') {
    const [name, value] = Object.entries(detail as Record<string, unknown>).find(([k]) => !k.startsWith('@_')) ?? [];
    if (name) {
      const first = Array.isArray(value) ? value[0] : value;
      type = xsiType(first) ?? name.replace(/Fault$/, '');
      fields = first as XmlNode;
    }
  }
  if (!type) type = /NotAuthenticated/i.test(faultstring) ? 'NotAuthenticated' : 'SystemError';
  return { type, message: faultstring, ...(fields !== undefined ? { detail: fields } : {}) };
}

/** A task's `info.error` (LocalizedMethodFault) as a fault. */
export function localizedFault(node: unknown): SoapFault {
  const fault = child(node, 'fault');
  return {
    type: xsiType(fault) ?? 'SystemError',
    message: text(child(node, 'localizedMessage')) ?? '',
    ...(fault !== undefined ? { detail: fault as XmlNode } : {}),
  };
}

// ---- reading parsed trees ----

export function child(node: unknown, name: string): unknown {
  if (!node || typeof node !== 'object' || Array.isArray(node)) return undefined;
  return (node as Record<string, unknown>)[name];
}

export function list(value: unknown): unknown[] {
  if (value === undefined || value === null || value === '') return [];
  return Array.isArray(value) ? value : [value];
}

/** The text of a node: a string, or `#text` of an element with attributes. */
export function text(node: unknown): string | undefined {
  if (typeof node === 'string') return node;
  if (node && typeof node === 'object' && !Array.isArray(node)) {
    const t = (node as Record<string, unknown>)['#text'];
    if (typeof t === 'string') return t;
    if (typeof t === 'number') return String(t);
    // An empty element with attributes only.
    return '';
  }
  return undefined;
}

/**
 * The `xsi:type` of an element, whatever prefix the server bound the XMLSchema-instance namespace to
 * (vcsim writes `_XMLSchema-instance:type`). A MoRef's own `type` attribute has no prefix.
 */
export function xsiType(node: unknown): string | undefined {
  if (!node || typeof node !== 'object' || Array.isArray(node)) return undefined;
  for (const [k, v] of Object.entries(node as Record<string, unknown>)) {
    if (k.startsWith('@_') && k.endsWith(':type') && typeof v === 'string') return v.replace(/^[^:]*:/, '');
  }
  return undefined;
}

/** A MoRef as parsed: `{ '#text': 'vm-42', '@_type': 'VirtualMachine' }`. */
export function morefOf(node: unknown): MoRef | undefined {
  const type = child(node, '@_type');
  const value = text(node);
  return typeof type === 'string' && value ? moref(type, value) : undefined;
}
