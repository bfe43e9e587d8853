import { UsageError } from './exit-codes';

const UNITS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 };

/** "90s", "10m", "1h30m", "500ms" or a bare number of seconds, as milliseconds. */
export function parseDuration(text: string): number {
  const value = text.trim();
  if (/^\d+(\.\d+)?$/.test(value)) return Math.round(Number(value) * 1_000);
  const parts = [...value.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join('') !== value)
    throw new UsageError(`"${text}" is not a duration (examples: 30s, 10m, 1h30m)`);
  const ms = parts.reduce((sum, [, n, unit]) => sum + Number(n) * UNITS[unit], 0);
  if (ms <= 0) throw new UsageError(`"${text}" must be longer than 0`);
  return Math.round(ms);
}

/** 4.2s, 1m05s, 1h02m: short and exact enough for people. */
export function formatDuration(ms: number): string {
  const s = Math.max(0, ms) / 1_000;
  if (s < 60) return `${s.toFixed(1)}s`;
  const whole = Math.floor(s);
  const [h, m, sec] = [Math.floor(whole / 3600), Math.floor((whole % 3600) / 60), whole % 60];
  const pad = (n: number) => String(n).padStart(2, '0');
  return h > 0 ? `${h}h${pad(m)}m` : `${m}m${pad(sec)}s`;
}
