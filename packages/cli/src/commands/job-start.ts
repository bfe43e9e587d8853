import { type HcpClient, type JobAccepted, newIdempotencyKey } from '@hcp/client';
import { Command, Option } from 'commander';
import { parseDuration } from '../duration';
import { EXIT, exitCodeOf } from '../exit-codes';
import { renderOne } from '../output/output';
import { watchJob } from '../progress/watch-job';
import { CliRuntime } from '../runtime';

export interface JobStartOptions {
  wait?: boolean;
  timeout: string;
  idempotencyKey?: string;
}

/** The options of every command that starts a job: --wait, --timeout, --idempotency-key. */
export function jobStartOptions(cmd: Command): Command {
  return cmd
    .option('-w, --wait', 'wait for the job to end, showing its progress; exit code says how it ended')
    .addOption(new Option('--timeout <duration>', 'with --wait: give up after this long (exit 5)').default('10m'))
    .option(
      '--idempotency-key <key>',
      'send this Idempotency-Key (default: a new one): retrying with the same key never starts a second job',
    );
}

/**
 * Sends a job-starting request with its Idempotency-Key and, with --wait, follows the job to its end.
 * Without --wait it prints the 202 answer. A request that got no answer or a 5xx tells how to retry it
 * safely (the same key).
 */
export async function startJob(
  rt: CliRuntime,
  cmd: Command,
  client: HcpClient,
  project: string,
  opts: JobStartOptions,
  send: (headers: { 'Idempotency-Key': string }) => Promise<JobAccepted>,
): Promise<void> {
  const key = opts.idempotencyKey ?? newIdempotencyKey();
  const timeoutMs = opts.wait ? parseDuration(opts.timeout) : 0;
  const format = rt.format(cmd);
  let accepted: JobAccepted;
  try {
    accepted = await send({ 'Idempotency-Key': key });
  } catch (err) {
    if (exitCodeOf(err) === EXIT.UNAVAILABLE)
      rt.err(`the request may or may not have been taken; retry it safely with --idempotency-key ${key}`);
    throw err;
  }
  if (!opts.wait) {
    rt.out(renderOne({ ...accepted, idempotency_key: key }, format));
    if (format === 'table') rt.err(`follow it: hcp jobs watch ${accepted.job_id}`);
    return;
  }
  const job = await watchJob(client, project, accepted.job_id, {
    timeoutMs,
    display: rt.io.stderr,
    appearWithinMs: 30_000,
  });
  // On a terminal the final line already said it all; a pipe or a file gets the answer.
  if (format !== 'table' || !(rt.io.stdout.isTTY && rt.io.stderr.isTTY)) rt.out(renderOne(job, format));
}
