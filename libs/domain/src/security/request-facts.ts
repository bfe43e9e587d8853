/**
 * What of a request may be recorded. A request's path, project id and headers are chosen by whoever
 * sends it, authenticated or not; recorded as they came, they put tokens from query strings into the
 * event store and project ids of any length into audit records that the message envelope then refuses
 * (so the audit projection stops on them). Everything recorded passes through here first: pure, so the
 * recorder, the upcasters of older events and the audit mapping apply the very same rules.
 */

/**
 * The texts a value that was missing becomes in a string (`${undefined}`): never an id. The API refuses
 * them as ids tenants and ops choose, so the event store can refuse a stream id built from one.
 */
export const MISSING_VALUE_IDS: ReadonlySet<string> = new Set(['undefined', 'null', 'NaN', '[object Object]']);

/** The API's project-id pattern (LIMITS.projectId is this one); no missing-value text (MISSING_VALUE_IDS). */
export const PROJECT_ID_PATTERN = /^(?!(?:undefined|null|NaN)$)[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/;

/** The longest recorded value taken from a request (an identifier, a header), in characters. */
export const RECORDED_VALUE_MAX = 128;
/** A break-glass reason: room for a ticket reference and a sentence (access refuses over 500 anyway). */
export const BREAK_GLASS_REASON_MAX = 512;
/** How much of a refused value is kept to show what it was. */
const REJECTED_PREFIX_MAX = 32;
/** Route templates have a handful of parameters; more than this is not a route of ours. */
const TARGET_ENTRIES_MAX = 8;
const PATH_MAX = 256;

/** A value that was not recorded as given: its length and its first characters, bounded. */
export interface RejectedValue {
  length: number;
  prefix: string;
}

/** At most `max` characters, control characters replaced; a cut value ends with `…`. */
export function boundedValue(value: string, max: number = RECORDED_VALUE_MAX): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it removes
  const printable = value.replace(/[\u0000-\u001f\u007f-\u009f]/g, '?');
  if (printable.length <= max) return printable;
  // Cut before a lone high surrogate, so the cut value is still well-formed text.
  const cut = printable.slice(0, max - 1).replace(/[\ud800-\udbff]$/, '');
  return `${cut}…`;
}

export function rejectedValue(value: string): RejectedValue {
  return { length: value.length, prefix: boundedValue(value, REJECTED_PREFIX_MAX) };
}

/** The project id to record: the given one when it is a valid project id, else null and what it was. */
export function recordedProjectId(value: unknown): { project_id: string | null; rejected: RejectedValue | null } {
  if (value === null || value === undefined) return { project_id: null, rejected: null };
  const text = typeof value === 'string' ? value : String(value);
  return PROJECT_ID_PATTERN.test(text)
    ? { project_id: text, rejected: null }
    : { project_id: null, rejected: rejectedValue(text) };
}

/** The identifiers a route matched, each bounded; only string values, at most a handful. */
export function boundedTarget(params: Record<string, unknown> | null | undefined): Record<string, string> {
  const target: Record<string, string> = {};
  for (const [key, value] of Object.entries(params ?? {})) {
    if (Object.keys(target).length >= TARGET_ENTRIES_MAX) break;
    if (typeof value === 'string') target[boundedValue(key, 64)] = boundedValue(value);
  }
  return target;
}

/** A path without its query string or fragment, bounded: what may be recorded of a URL at most. */
export function recordedPath(url: string): string {
  return boundedValue(url.split(/[?#]/, 1)[0], PATH_MAX);
}

export interface RouteFacts {
  /** `METHOD /route/template` (or `METHOD <bounded path>` when no route matched). */
  action: string;
  /** The route template the request matched, or null when none did. */
  route: string | null;
  /** The identifiers the template matched in the path, each bounded. */
  target: Record<string, string>;
}

/**
 * A request described by its route: from the action (`METHOD /v1/projects/:project_id/vms`) and the raw
 * URL it came with, the template and the identifiers it matched. Never the raw URL, never its query.
 */
export function routeFacts(method: string, action: string, url: string): RouteFacts {
  const verb = boundedValue(method, 16);
  const given = url.split(/[?#]/, 1)[0];
  // The API's router matches with or without a trailing slash; so does this.
  const path = given.length > 1 && given.endsWith('/') ? given.slice(0, -1) : given;
  const template = action.startsWith(`${method} `) ? action.slice(method.length + 1) : null;
  const params = template ? matchTemplate(template, path) : null;
  if (template && params) return { action: `${verb} ${template}`, route: template, target: boundedTarget(params) };
  return { action: `${verb} ${recordedPath(path)}`, route: null, target: {} };
}

/** The parameters of a route template (`/a/:x/b`) in a path, or null when it does not match. */
export function matchTemplate(template: string, path: string): Record<string, string> | null {
  if (!template.startsWith('/') || template.length > PATH_MAX) return null;
  const want = template.split('/');
  const got = path.split('/');
  if (want.length !== got.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < want.length; i++) {
    if (want[i].startsWith(':')) {
      if (got[i] === '') return null;
      params[want[i].slice(1)] = safeDecode(got[i]);
    } else if (want[i] !== got[i]) return null;
  }
  return params;
}

function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}
