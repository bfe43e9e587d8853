import type { Job } from '@hcp/client';
import { createJobDisplay } from './job-display';

const job = (patch: Partial<Job>): Job => ({
  id: 'j-1',
  project_id: 'p',
  type: 'vm.start',
  status: 'queued',
  resource_id: 'vm-1',
  attempts: 0,
  created_at: '2026-01-01T00:00:00.000Z',
  started_at: null,
  finished_at: null,
  error: null,
  trace_id: 't',
  deadline: '2026-01-01T00:10:00.000Z',
  ...patch,
});

function stream(isTTY: boolean, columns?: number) {
  const writes: string[] = [];
  return { writes, isTTY, columns, write: (text: string) => writes.push(text) };
}

describe('job display', () => {
  it('off a terminal writes one plain line per change and none for a read that changed nothing', () => {
    const out = stream(false);
    let now = 0;
    const display = createJobDisplay(out, 'j-1', () => now);
    display.update({ job: job({}) });
    now = 500;
    display.update({ job: job({}) });
    display.update({ job: job({ status: 'running', attempts: 1 }), vmStatus: 'starting' });
    display.finish('✔ done');
    expect(out.writes.join('')).toBe(
      'waiting for job j-1\nqueued at 2026-01-01T00:00:00.000Z (0.0s)\nattempt 1 started (0.5s)\nvm starting (0.5s)\n✔ done\n',
    );
  });

  it('on a terminal redraws one status line in place, prints steps above it, and ends with the final line', () => {
    const out = stream(true, 30);
    let now = 0;
    const display = createJobDisplay(out, 'j-1', () => now);
    now = 1_200;
    display.update({ job: job({ status: 'running', attempts: 1 }) });
    display.finish('✔ vm.start succeeded');
    const text = out.writes.join('');
    const clear = `\r${String.fromCharCode(27)}[2K`;
    const pieces = text.split(clear).filter(Boolean);
    expect(pieces[0]).toBe('⠋ job j-1: waiting for its fi');
    expect(pieces).toContain('  · attempt 1 started (1.2s)\n');
    // Cut to the terminal's width less one, so a redraw never wraps.
    expect(pieces.filter((p) => !p.endsWith('\n')).every((p) => [...p].length <= 29)).toBe(true);
    expect(pieces.at(-1)).toBe('✔ vm.start succeeded\n');
  });
});
