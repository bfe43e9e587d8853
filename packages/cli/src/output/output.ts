import { stringify } from 'yaml';
import { UsageError } from '../exit-codes';

export const OUTPUT_FORMATS = ['table', 'json', 'yaml'] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

export function parseOutputFormat(value: string): OutputFormat {
  if ((OUTPUT_FORMATS as readonly string[]).includes(value)) return value as OutputFormat;
  throw new UsageError(`--output must be one of ${OUTPUT_FORMATS.join(', ')}, not "${value}"`);
}

/** A column of a table: its header and how a row shows it. */
export type Column<T> = [header: string, cell: (row: T) => unknown];

/** A list as the chosen format: JSON and YAML give the items as HCP answered them, a table the columns. */
export function renderList<T>(items: T[], format: OutputFormat, columns: Column<T>[]): string {
  if (format === 'json') return `${JSON.stringify(items, null, 2)}\n`;
  if (format === 'yaml') return stringify(items);
  if (items.length === 0) return '';
  return table([columns.map(([h]) => h), ...items.map((item) => columns.map(([, cell]) => text(cell(item))))]);
}

/** One resource: JSON or YAML as answered, or one `field  value` line per field. */
export function renderOne(value: unknown, format: OutputFormat): string {
  if (format === 'json') return `${JSON.stringify(value, null, 2)}\n`;
  if (format === 'yaml') return stringify(value);
  if (value === null || typeof value !== 'object') return `${text(value)}\n`;
  return table(Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, text(v)]));
}

/** Columns padded to their widest cell, two spaces apart, no trailing blanks. */
export function table(rows: string[][]): string {
  const widths: number[] = [];
  for (const row of rows) for (const [i, cell] of row.entries()) widths[i] = Math.max(widths[i] ?? 0, cell.length);
  const lines = rows.map((row) =>
    row
      .map((cell, i) => cell.padEnd(widths[i]))
      .join('  ')
      .trimEnd(),
  );
  return `${lines.join('\n')}\n`;
}

/** A cell: strings as they are, nothing as "-", objects as compact JSON on one line. */
export function text(value: unknown): string {
  if (value === null || value === undefined || value === '') return '-';
  if (typeof value === 'string') return value.replace(/\s+/g, ' ');
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (Array.isArray(value) && value.length === 0) return '-';
  return JSON.stringify(value);
}
