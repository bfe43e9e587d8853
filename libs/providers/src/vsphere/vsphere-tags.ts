/**
 * The tenant's tags in extraConfig, one key each: `hcp.tag.<key>` with the key percent-encoded
 * (extraConfig keys take letters, digits, dots, dashes and underscores) and the value as JSON, so
 * an empty value survives (vSphere deletes a key set to "") and reads back exactly.
 */
import { type Typed, typed, xsdString } from './soap-envelope';

const PREFIX = 'hcp.tag.';

export function tagKey(key: string): string {
  const encoded = Array.from(Buffer.from(key, 'utf8'))
    .map((b) => {
      const c = String.fromCharCode(b);
      return /[A-Za-z0-9_-]/.test(c) ? c : `%${b.toString(16).toUpperCase().padStart(2, '0')}`;
    })
    .join('');
  return `${PREFIX}${encoded}`;
}

function keyOf(configKey: string): string | undefined {
  try {
    return decodeURIComponent(configKey.slice(PREFIX.length));
  } catch {
    return undefined;
  }
}

export function tagsOf(extra: Record<string, string>): Record<string, string> {
  const tags: Record<string, string> = {};
  for (const [k, v] of Object.entries(extra)) {
    if (!k.startsWith(PREFIX) || v === '') continue;
    const key = keyOf(k);
    let value: unknown;
    try {
      value = JSON.parse(v);
    } catch {
      continue;
    }
    if (key !== undefined && typeof value === 'string') tags[key] = value;
  }
  return tags;
}

/** extraConfig options turning `current` into `tags` (removed keys set to "", which deletes them). */
export function tagOptions(current: Record<string, string>, tags: Record<string, string>): Record<string, string> {
  const wanted: Record<string, string> = {};
  for (const [k, v] of Object.entries(tags)) wanted[tagKey(k)] = JSON.stringify(v);
  const changes: Record<string, string> = {};
  for (const [k, v] of Object.entries(wanted)) if (current[k] !== v) changes[k] = v;
  for (const k of Object.keys(current)) if (k.startsWith(PREFIX) && !(k in wanted)) changes[k] = '';
  return changes;
}

export function optionValues(options: Record<string, string>): Typed[] {
  return Object.entries(options).map(([key, value]) => typed('OptionValue', { key, value: xsdString(value) }));
}
