import { createHash } from 'node:crypto';

/**
 * A UUID-shaped id derived from names (RFC 9562 version 8 layout): the same names always give the same
 * id. Used where a retry must land on the resource the first try created, not on a new one.
 */
export function nameBasedId(...names: string[]): string {
  const h = createHash('sha256').update(names.join('\u0000')).digest('hex');
  const variant = ((parseInt(h[16], 16) & 0x3) | 0x8).toString(16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-8${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}
