/**
 * Fault injection for the simulator, so that retries, lease expiry and timeouts can be exercised
 * end to end without a misbehaving real hypervisor.
 *
 * Configuration string: comma-separated `operation=mode[:CODE][@probability]`, for example
 *   create=fail,stop=timeout,reboot=fail@0.3,start=fail:PROVIDER_UNAVAILABLE
 * - operation: create | start | stop | reboot | delete | describe | console | list | tags (each at most once)
 * - mode: `fail` throws a retryable HcpError with CODE (default PROVIDER_UNAVAILABLE);
 *         `timeout` hangs until the call's deadline or abort, then throws PROVIDER_TIMEOUT.
 * - probability: 0..1, default 1; drawn per call.
 * An empty string means no faults.
 */
import { ERROR_CODES, HcpError, type ErrorCode } from '@hcp/domain';
import type { CallContext } from '../spi/provider-driver';

export const SIMULATOR_OPERATIONS = [
  'create',
  'start',
  'stop',
  'reboot',
  'delete',
  'describe',
  'console',
  'list',
  'tags',
] as const;
export type SimulatorOperation = (typeof SIMULATOR_OPERATIONS)[number];

export type FaultRule =
  | { operation: SimulatorOperation; mode: 'fail'; code: ErrorCode; probability: number }
  | { operation: SimulatorOperation; mode: 'timeout'; probability: number };

const DEFAULT_FAIL_CODE: ErrorCode = 'PROVIDER_UNAVAILABLE';

function parseError(spec: string, message: string): HcpError {
  return new HcpError('INVALID_REQUEST', `invalid simulator faults "${spec}": ${message}`);
}

function isOperation(value: string): value is SimulatorOperation {
  return (SIMULATOR_OPERATIONS as readonly string[]).includes(value);
}

function isErrorCode(value: string): value is ErrorCode {
  return (ERROR_CODES as readonly string[]).includes(value);
}

function parseRule(spec: string, entry: string): FaultRule {
  const eq = entry.indexOf('=');
  if (eq < 0) throw parseError(spec, `entry "${entry}" must look like operation=mode[:CODE][@probability]`);
  const operation = entry.slice(0, eq).trim();
  const value = entry.slice(eq + 1).trim();
  if (!isOperation(operation)) {
    throw parseError(spec, `unknown operation "${operation}" (expected one of ${SIMULATOR_OPERATIONS.join(', ')})`);
  }

  // Modifiers may come in either order (`fail:CODE@0.3` or `fail@0.3:CODE`): people write both.
  const match = /^([a-z]+)((?:[:@][^:@]*)*)$/.exec(value);
  if (!match) throw parseError(spec, `entry "${entry}" must look like operation=mode[:CODE][@probability]`);
  const mode = match[1];
  if (mode !== 'fail' && mode !== 'timeout') {
    throw parseError(spec, `unknown mode "${mode}" for ${operation} (expected fail or timeout)`);
  }

  let code: ErrorCode | undefined;
  let probability: number | undefined;
  for (const modifier of match[2].match(/[:@][^:@]*/g) ?? []) {
    const body = modifier.slice(1).trim();
    if (modifier[0] === ':') {
      if (code !== undefined) throw parseError(spec, `${operation} has more than one error code`);
      if (mode === 'timeout') throw parseError(spec, `${operation}=timeout takes no error code`);
      if (!isErrorCode(body)) {
        throw parseError(
          spec,
          `unknown error code "${body}" for ${operation} (expected one of ${ERROR_CODES.join(', ')})`,
        );
      }
      code = body;
    } else {
      if (probability !== undefined) throw parseError(spec, `${operation} has more than one probability`);
      // Number('') is 0, so an empty "@" must be rejected explicitly.
      const p = body === '' ? NaN : Number(body);
      if (!Number.isFinite(p) || p < 0 || p > 1) {
        throw parseError(spec, `probability "${body}" for ${operation} must be a number from 0 to 1`);
      }
      probability = p;
    }
  }

  return mode === 'fail'
    ? { operation, mode, code: code ?? DEFAULT_FAIL_CODE, probability: probability ?? 1 }
    : { operation, mode, probability: probability ?? 1 };
}

/** Parses a fault string; throws INVALID_REQUEST with a message naming the bad part. */
export function parseSimulatorFaults(spec: string): FaultRule[] {
  const rules: FaultRule[] = [];
  const seen = new Set<SimulatorOperation>();
  for (const raw of spec.split(',')) {
    const entry = raw.trim();
    if (entry === '') continue;
    const rule = parseRule(spec, entry);
    if (seen.has(rule.operation)) throw parseError(spec, `${rule.operation} is configured more than once`);
    seen.add(rule.operation);
    rules.push(rule);
  }
  return rules;
}

// setTimeout overflows past this many milliseconds and fires at once.
const MAX_TIMER_MS = 2_147_483_647;

function abortedError(step: string): HcpError {
  return new HcpError('PROVIDER_TIMEOUT', `simulator ${step} was aborted`, { step, reason: 'aborted' });
}

function deadlineError(step: string): HcpError {
  return new HcpError('PROVIDER_TIMEOUT', `simulator ${step} did not finish before the deadline`, {
    step,
    reason: 'deadline',
  });
}

/** Throws when the call has been aborted or its deadline has passed. */
export function throwIfCallOver(ctx: CallContext, step: string): void {
  if (ctx.signal.aborted) throw abortedError(step);
  if (Date.now() >= ctx.deadline.getTime()) throw deadlineError(step);
}

function sleepUnlessAborted(ms: number, signal: AbortSignal, step: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortedError(step));
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * Spends `ms` (Infinity: forever) of a call. Throws PROVIDER_TIMEOUT as soon as the call is aborted,
 * or at the deadline when the step would outlast it, so a step never runs past what the job allows.
 */
export async function spendWithinCall(ms: number, ctx: CallContext, step: string): Promise<void> {
  throwIfCallOver(ctx, step);
  const end = Date.now() + ms;
  for (;;) {
    const now = Date.now();
    if (now >= end) return;
    const untilDeadline = ctx.deadline.getTime() - now;
    if (untilDeadline <= 0) throw deadlineError(step);
    await sleepUnlessAborted(Math.min(end - now, untilDeadline, MAX_TIMER_MS), ctx.signal, step);
  }
}

/** The configured faults. Holds no randomness of its own: the driver passes its source in. */
export class SimulatorFaults {
  private readonly byOperation: ReadonlyMap<SimulatorOperation, FaultRule>;

  constructor(readonly rules: readonly FaultRule[] = []) {
    this.byOperation = new Map(rules.map((r) => [r.operation, r]));
  }

  static parse(spec: string | undefined): SimulatorFaults {
    return new SimulatorFaults(parseSimulatorFaults(spec ?? ''));
  }

  static none(): SimulatorFaults {
    return new SimulatorFaults([]);
  }

  /** The rule that fires for this call, if any. `random` returns values in [0, 1). */
  decide(operation: SimulatorOperation, random: () => number): FaultRule | null {
    const rule = this.byOperation.get(operation);
    if (!rule || rule.probability <= 0) return null;
    // p = 1 must always fire without consuming randomness, so tests with a fixed source stay readable.
    if (rule.probability >= 1) return rule;
    return random() < rule.probability ? rule : null;
  }

  /** Fails or hangs the call when a rule fires; returns normally otherwise. */
  async inject(operation: SimulatorOperation, ctx: CallContext, random: () => number): Promise<void> {
    const rule = this.decide(operation, random);
    if (!rule) return;
    if (rule.mode === 'fail') {
      // Injected faults model transient provider trouble, so they are retryable whatever the code.
      throw new HcpError(
        rule.code,
        `simulator ${operation} failed (injected fault)`,
        { operation, injected: true },
        true,
      );
    }
    await spendWithinCall(Infinity, ctx, `${operation} (injected timeout)`);
  }
}
