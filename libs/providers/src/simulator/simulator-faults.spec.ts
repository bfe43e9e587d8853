import { HcpError } from '@hcp/domain';
import type { CallContext } from '../spi/provider-driver';
import { SimulatorFaults, parseSimulatorFaults, spendWithinCall } from './simulator-faults';

function ctx(ms: number, signal: AbortSignal = new AbortController().signal): CallContext {
  return { deadline: new Date(Date.now() + ms), signal };
}

async function caught(promise: Promise<unknown>): Promise<HcpError> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof HcpError) return err;
    throw err;
  }
  throw new Error('expected the promise to reject');
}

function caughtSync(fn: () => unknown): HcpError {
  try {
    fn();
  } catch (err) {
    if (err instanceof HcpError) return err;
    throw err;
  }
  throw new Error('expected the call to throw');
}

const never = () => {
  throw new Error('random must not be consulted');
};

describe('parseSimulatorFaults', () => {
  it('parses the documented example', () => {
    expect(parseSimulatorFaults('create=fail,stop=timeout,reboot=fail@0.3,start=fail:PROVIDER_UNAVAILABLE')).toEqual([
      { operation: 'create', mode: 'fail', code: 'PROVIDER_UNAVAILABLE', probability: 1 },
      { operation: 'stop', mode: 'timeout', probability: 1 },
      { operation: 'reboot', mode: 'fail', code: 'PROVIDER_UNAVAILABLE', probability: 0.3 },
      { operation: 'start', mode: 'fail', code: 'PROVIDER_UNAVAILABLE', probability: 1 },
    ]);
  });

  it('treats an empty or blank string as no faults', () => {
    expect(parseSimulatorFaults('')).toEqual([]);
    expect(parseSimulatorFaults('  ,  ')).toEqual([]);
  });

  it('accepts a code and a probability in either order and tolerates spaces', () => {
    expect(parseSimulatorFaults(' delete = fail:RATE_LIMITED@0.5 , describe=fail@0.25:INTERNAL_ERROR ')).toEqual([
      { operation: 'delete', mode: 'fail', code: 'RATE_LIMITED', probability: 0.5 },
      { operation: 'describe', mode: 'fail', code: 'INTERNAL_ERROR', probability: 0.25 },
    ]);
  });

  it('accepts every operation', () => {
    const ops = ['create', 'start', 'stop', 'reboot', 'delete', 'describe', 'console'];
    expect(parseSimulatorFaults(ops.map((o) => `${o}=timeout@0`).join(',')).map((r) => r.operation)).toEqual(ops);
  });

  it.each([
    ['resize=fail', /unknown operation "resize"/],
    ['create=explode', /unknown mode "explode"/],
    ['create', /must look like operation=mode/],
    ['create=fail@1.5', /probability "1.5".*from 0 to 1/],
    ['create=fail@-0.1', /probability "-0.1"/],
    ['create=fail@abc', /probability "abc"/],
    ['create=fail@', /probability ""/],
    ['create=fail:NOPE', /unknown error code "NOPE"/],
    ['stop=timeout:PROVIDER_TIMEOUT', /timeout takes no error code/],
    ['create=fail@0.1@0.2', /more than one probability/],
    ['create=fail:CONFLICT:NOT_FOUND', /more than one error code/],
    ['create=fail,create=timeout', /create is configured more than once/],
  ])('rejects %s with a clear message', (spec, message) => {
    const err = caughtSync(() => parseSimulatorFaults(spec));
    expect(err.code).toBe('INVALID_REQUEST');
    expect(err.message).toContain(`invalid simulator faults "${spec}"`);
    expect(err.message).toMatch(message);
  });
});

describe('SimulatorFaults.decide', () => {
  it('fires a rule with probability 1 without consulting randomness', () => {
    expect(SimulatorFaults.parse('start=fail').decide('start', never)).toMatchObject({ mode: 'fail' });
  });

  it('never fires a rule with probability 0', () => {
    expect(SimulatorFaults.parse('start=fail@0').decide('start', never)).toBeNull();
  });

  it('fires when the random draw is below the probability and not otherwise', () => {
    const faults = SimulatorFaults.parse('reboot=fail@0.3');
    expect(faults.decide('reboot', () => 0.29)).not.toBeNull();
    expect(faults.decide('reboot', () => 0.3)).toBeNull();
    expect(faults.decide('reboot', () => 0.9)).toBeNull();
  });

  it('fires about as often as configured over many draws', () => {
    const faults = SimulatorFaults.parse('reboot=fail@0.3');
    let seed = 42;
    // A small LCG keeps the test deterministic while exercising the whole range of draws.
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    let fired = 0;
    for (let i = 0; i < 10_000; i++) if (faults.decide('reboot', random)) fired++;
    expect(fired / 10_000).toBeGreaterThan(0.27);
    expect(fired / 10_000).toBeLessThan(0.33);
  });

  it('does not affect operations without a rule', () => {
    expect(SimulatorFaults.parse('start=fail').decide('stop', never)).toBeNull();
    expect(SimulatorFaults.none().decide('create', never)).toBeNull();
  });
});

describe('SimulatorFaults.inject', () => {
  it('throws a retryable error with the configured code for fail', async () => {
    const err = await caught(SimulatorFaults.parse('start=fail:RATE_LIMITED').inject('start', ctx(1000), never));
    expect(err.code).toBe('RATE_LIMITED');
    expect(err.retryable).toBe(true);
    expect(err.details).toEqual({ operation: 'start', injected: true });
  });

  it('makes even a normally final code retryable, because injected faults model transient trouble', async () => {
    const err = await caught(SimulatorFaults.parse('delete=fail:INTERNAL_ERROR').inject('delete', ctx(1000), never));
    expect(err.code).toBe('INTERNAL_ERROR');
    expect(err.retryable).toBe(true);
  });

  it('defaults fail to PROVIDER_UNAVAILABLE', async () => {
    const err = await caught(SimulatorFaults.parse('create=fail').inject('create', ctx(1000), never));
    expect(err.code).toBe('PROVIDER_UNAVAILABLE');
  });

  it('waits for the deadline and then throws PROVIDER_TIMEOUT for timeout', async () => {
    const started = Date.now();
    const err = await caught(SimulatorFaults.parse('stop=timeout').inject('stop', ctx(60), never));
    expect(err.code).toBe('PROVIDER_TIMEOUT');
    expect(err.retryable).toBe(true);
    expect(Date.now() - started).toBeGreaterThanOrEqual(55);
  });

  it('gives up a timeout as soon as the call is aborted', async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 20);
    const started = Date.now();
    const err = await caught(
      SimulatorFaults.parse('stop=timeout').inject('stop', ctx(60_000, controller.signal), never),
    );
    expect(err.code).toBe('PROVIDER_TIMEOUT');
    expect(err.details).toMatchObject({ reason: 'aborted' });
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it('returns normally when no rule fires', async () => {
    await expect(
      SimulatorFaults.parse('start=fail@0.5').inject('start', ctx(1000), () => 0.7),
    ).resolves.toBeUndefined();
  });
});

describe('spendWithinCall', () => {
  it('completes a step that fits before the deadline', async () => {
    await expect(spendWithinCall(10, ctx(1000), 'step')).resolves.toBeUndefined();
  });

  it('refuses a call whose deadline has already passed, even for no time at all', async () => {
    const err = await caught(spendWithinCall(0, ctx(-1), 'step'));
    expect(err.code).toBe('PROVIDER_TIMEOUT');
    expect(err.details).toMatchObject({ step: 'step', reason: 'deadline' });
  });

  it('refuses a call that is already aborted', async () => {
    const controller = new AbortController();
    controller.abort();
    const err = await caught(spendWithinCall(0, ctx(1000, controller.signal), 'step'));
    expect(err.details).toMatchObject({ reason: 'aborted' });
  });

  it('stops at the deadline instead of finishing a longer step', async () => {
    const started = Date.now();
    const err = await caught(spendWithinCall(10_000, ctx(40), 'clone'));
    expect(err.code).toBe('PROVIDER_TIMEOUT');
    expect(Date.now() - started).toBeLessThan(1000);
  });
});
