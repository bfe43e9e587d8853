import { formatDuration } from '../duration';
import { JobSnapshot, statusLine, stepsBetween } from './job-steps';

const SPINNER = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
const CLEAR_LINE = '\r\x1b[2K';

export interface DisplayStream {
  write(text: string): unknown;
  isTTY?: boolean;
  columns?: number;
}

/** Shows a job being waited for: the steps it records, and (on a terminal) a status line kept in place. */
export interface JobDisplay {
  update(snapshot: JobSnapshot): void;
  /** Ends the display with its final line (the status line, if any, is replaced by it). */
  finish(line: string): void;
}

/**
 * On a terminal: each step printed once above a status line (spinner, job type, status, attempt, VM
 * status, elapsed) that is redrawn in place ten times a second. Elsewhere (a pipe, a CI log): one plain
 * line per change, no control characters.
 */
export function createJobDisplay(out: DisplayStream, jobId: string, now: () => number = Date.now): JobDisplay {
  return out.isTTY ? new LiveDisplay(out, jobId, now) : new PlainDisplay(out, jobId, now);
}

class LiveDisplay implements JobDisplay {
  private last?: JobSnapshot;
  private frame = 0;
  private readonly started: number;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly out: DisplayStream,
    private readonly jobId: string,
    private readonly now: () => number,
  ) {
    this.started = now();
    this.timer = setInterval(() => this.draw(), 100);
    this.timer.unref();
    this.draw();
  }

  update(snapshot: JobSnapshot): void {
    const steps = stepsBetween(this.last, snapshot);
    this.last = snapshot;
    const elapsed = formatDuration(this.now() - this.started);
    for (const step of steps) this.out.write(`${CLEAR_LINE}  · ${step} (${elapsed})\n`);
    this.draw();
  }

  finish(line: string): void {
    clearInterval(this.timer);
    this.out.write(`${CLEAR_LINE}${line}\n`);
  }

  private draw(): void {
    const spinner = SPINNER[this.frame++ % SPINNER.length];
    const text = `${spinner} ${statusLine(this.last, this.jobId, this.now() - this.started)}`;
    // A line longer than the terminal wraps, and \r would then redraw only its last row.
    const width = Math.max(20, (this.out.columns || 80) - 1);
    this.out.write(`${CLEAR_LINE}${[...text].slice(0, width).join('')}`);
  }
}

class PlainDisplay implements JobDisplay {
  private last?: JobSnapshot;
  private readonly started: number;

  constructor(
    private readonly out: DisplayStream,
    private readonly jobId: string,
    private readonly now: () => number,
  ) {
    this.started = now();
    this.out.write(`waiting for job ${jobId}\n`);
  }

  update(snapshot: JobSnapshot): void {
    const steps = stepsBetween(this.last, snapshot);
    const changed = !this.last || this.last.job.status !== snapshot.job.status || steps.length > 0;
    this.last = snapshot;
    if (!changed) return;
    const elapsed = formatDuration(this.now() - this.started);
    for (const step of steps) this.out.write(`${step} (${elapsed})\n`);
    if (steps.length === 0) this.out.write(`${statusLine(snapshot, this.jobId, this.now() - this.started)}\n`);
  }

  finish(line: string): void {
    this.out.write(`${line}\n`);
  }
}
