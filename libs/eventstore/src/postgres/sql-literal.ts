/**
 * A string as an SQL literal, exactly as pg's escapeLiteral writes it (quotes and backslashes doubled,
 * the E'' form when there is a backslash), with native replaces instead of its character-by-character
 * concatenation: an append's JSON payload is tens of kilobytes, and that loop showed in the profile.
 */
export function sqlLiteral(value: string): string {
  const hasBackslash = value.includes('\\');
  let escaped = value.includes("'") ? value.replaceAll("'", "''") : value;
  if (hasBackslash) escaped = escaped.replaceAll('\\', '\\\\');
  return hasBackslash ? ` E'${escaped}'` : `'${escaped}'`;
}
