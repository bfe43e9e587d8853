import { readFileSync } from 'node:fs';
import * as path from 'node:path';

/** The repository's copy of the northbound contract. */
export const API_MD_PATH = path.join(__dirname, '..', '..', 'docs', 'API.md');

export function readApiMd(): string {
  return readFileSync(API_MD_PATH, 'utf8');
}

export const HTTP_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
export type HttpMethod = (typeof HTTP_METHODS)[number];

/** A route API.md names: in its route tables (tenant and ops scope) or its health section. */
export interface MentionedRoute {
  method: HttpMethod;
  /** Normalised: no query string, `{p}` written `{project_id}`. */
  path: string;
  /** The `## ` section it is named in. */
  section: string;
  /** The status the row's answer column starts with (tenant table: `202; body ...`), when it does. */
  status?: number;
}

/** `{p}` is API.md's short name for the project; any query string (`?resource_id={id}`) is no part of the path. */
export function normalisePath(p: string): string {
  return p.split('?')[0]!.replace(/\{p\}/g, '{project_id}');
}

/** The route's path with its parameters anonymous, for comparing API.md's `{id}` with the router's `{vm_id}`. */
export function shapeOf(p: string): string {
  return normalisePath(p).replace(/\{[^}]+\}/g, '{}');
}

export function routeName(r: { method: string; path: string }): string {
  return `${r.method} ${r.path}`;
}

/** The markdown's `## ` sections by title. */
export function sectionsOf(markdown: string): Map<string, string> {
  const sections = new Map<string, string>();
  for (const chunk of markdown.split(/^## /m).slice(1)) {
    const newline = chunk.indexOf('\n');
    sections.set(chunk.slice(0, newline).trim(), chunk.slice(newline + 1));
  }
  return sections;
}

function section(markdown: string, prefix: string): [string, string] {
  const found = [...sectionsOf(markdown)].find(([title]) => title.startsWith(prefix));
  if (!found) throw new Error(`API.md has no section "## ${prefix}..."`);
  return found;
}

/** A table row's cells; a `\|` inside a cell (in `vnc \| spice`) is part of it. */
export function cellsOf(row: string): string[] {
  return row
    .trim()
    .replace(/^\||\|$/g, '')
    .split(/(?<!\\)\|/)
    .map((c) => c.trim());
}

const METHOD_SPAN = new RegExp(`^((?:${HTTP_METHODS.join('|')})(?:/(?:${HTTP_METHODS.join('|')}))*)\\s+(/\\S+)$`);
const BARE_PATH_SPAN = /^(\/v1\/\S+)$/;

/**
 * The routes one stretch of API.md names in backticks: `GET /v1/zones`; `POST/GET /v1/ops/providers` (two
 * routes); a bare path right after one (`` `POST/PATCH/DELETE /v1/ops/images`, `/v1/ops/flavors` ``) takes
 * its methods. In a method list on a collection, PUT, PATCH and DELETE are on its items (`{id}`), as
 * everywhere in API.md where the item's path is not written out. Paths in prose (`Location` at
 * `/v1/projects/{p}/jobs/{job_id}`) name no method and are not routes.
 */
export function routesInText(text: string): Array<{ method: HttpMethod; path: string }> {
  const routes: Array<{ method: HttpMethod; path: string }> = [];
  let previous: { methods: HttpMethod[]; end: number } | null = null;
  for (const span of text.matchAll(/`([^`]+)`/g)) {
    const content = span[1]!.trim();
    const start = span.index!;
    let methods: HttpMethod[] | null = null;
    let p: string | null = null;
    const withMethod = METHOD_SPAN.exec(content);
    if (withMethod) {
      methods = withMethod[1]!.split('/') as HttpMethod[];
      p = withMethod[2]!;
    } else if (BARE_PATH_SPAN.test(content) && previous && text.slice(previous.end, start) === ', ') {
      methods = previous.methods;
      p = content;
    }
    if (methods && p) {
      const onCollection = methods.length > 1 && !/\}$/.test(normalisePath(p));
      for (const method of methods) {
        const itemMethod = onCollection && method !== 'GET' && method !== 'POST';
        routes.push({ method, path: normalisePath(itemMethod ? `${p}/{id}` : p) });
      }
      previous = { methods, end: start + span[0].length };
    } else previous = null;
  }
  return routes;
}

/**
 * Every route API.md names: the first column of its tenant and ops route tables, and the health
 * section. Each once (by method and path shape), with the status the tenant table's answer column gives.
 */
export function routesInApiMd(markdown: string): MentionedRoute[] {
  const found = new Map<string, MentionedRoute>();
  const add = (r: { method: HttpMethod; path: string }, title: string, status?: number) => {
    const key = `${r.method} ${shapeOf(r.path)}`;
    if (!found.has(key)) found.set(key, { ...r, section: title, ...(status ? { status } : {}) });
  };
  for (const prefix of ['Tenant scope', 'Ops scope']) {
    const [title, text] = section(markdown, prefix);
    const rows = text.split('\n').filter((line) => line.startsWith('|') && !/^\|[-| ]+\|$/.test(line.trim()));
    for (const row of rows) {
      const cells = cellsOf(row);
      const status = prefix === 'Tenant scope' ? /^(\d{3})\b/.exec(cells[2] ?? '')?.[1] : undefined;
      for (const r of routesInText(cells[0]!)) add(r, title, status ? Number(status) : undefined);
    }
  }
  const [title, text] = section(markdown, 'Health and metrics');
  for (const r of routesInText(text)) add(r, title);
  return [...found.values()];
}

/** The error taxonomy table of API.md's "Errors" section: code to HTTP status. */
export function errorTaxonomyOf(markdown: string): Map<string, number> {
  const [, text] = section(markdown, 'Errors');
  const taxonomy = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line.startsWith('|')) continue;
    const [code, status] = cellsOf(line);
    if (code && /^[A-Z_]+$/.test(code) && status && /^\d{3}$/.test(status)) taxonomy.set(code, Number(status));
  }
  return taxonomy;
}

/**
 * The fields of a resource API.md describes under `### <title>`: its first backticked span, as in
 * `` `id, project_id, type (vm.create | ...), addresses[], tags{}` `` or `` `{ "session_id", "type" }` ``,
 * with any `- `field` (added)` line under it.
 */
export function resourceFieldsOf(markdown: string, title: string): string[] {
  const at = markdown.indexOf(`\n### ${title}\n`);
  if (at < 0) throw new Error(`API.md has no "### ${title}"`);
  const rest = markdown.slice(at + title.length + 6);
  const body = rest.slice(0, rest.search(/\n#{2,3} /) >= 0 ? rest.search(/\n#{2,3} /) : undefined);
  const span = /`([^`]+)`/.exec(body)?.[1] ?? '';
  const fields = span
    .replace(/\([^)]*\)/g, '')
    .replace(/[{}"[\]]/g, '')
    .split(',')
    .map((f) => f.trim())
    .filter(Boolean);
  const added = [...body.matchAll(/^- `(\w+)` \(added\)/gm)].map((m) => m[1]!);
  return [...fields, ...added];
}
