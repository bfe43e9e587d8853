import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import { ServingState } from './serving-state';

/** The part of a ServerResponse the state uses: its events and headers. */
function response(headersSent = false) {
  const res = Object.assign(new EventEmitter(), {
    headersSent,
    headers: {} as Record<string, string>,
    setHeader(name: string, value: string) {
      this.headers[name.toLowerCase()] = value;
    },
  });
  return res as typeof res & ServerResponse;
}

describe('ServingState', () => {
  it('serves until drained', () => {
    const state = new ServingState();
    expect(state.draining).toBe(false);
    state.drain();
    expect(state.draining).toBe(true);
  });

  it('makes the requests in flight close their connection after their answer when it drains', () => {
    const state = new ServingState();
    const pending = response();
    const answered = response(true);
    state.track(pending);
    state.track(answered);
    state.drain();
    expect(pending.headers.connection).toBe('close');
    expect(answered.headers.connection).toBeUndefined();
  });

  it('is idle once every request in flight is answered or its connection is gone', async () => {
    const state = new ServingState();
    const a = response();
    const b = response();
    state.track(a);
    state.track(b);
    let idle = false;
    const whenIdle = state.whenIdle().then(() => (idle = true));
    a.emit('finish');
    a.emit('close');
    await Promise.resolve();
    expect(idle).toBe(false);
    expect(state.requestsInFlight).toBe(1);
    b.emit('close');
    await whenIdle;
    expect(state.requestsInFlight).toBe(0);
  });

  it('drains every request still in flight, whichever of the others were answered first', async () => {
    const state = new ServingState();
    const [first, middle, last] = [response(), response(), response()];
    for (const res of [first, middle, last]) state.track(res);
    middle.emit('finish');
    state.drain();
    expect(state.requestsInFlight).toBe(2);
    expect([first.headers.connection, middle.headers.connection, last.headers.connection]).toEqual([
      'close',
      undefined,
      'close',
    ]);
    const whenIdle = state.whenIdle();
    last.emit('finish');
    first.emit('close');
    await whenIdle;
    expect(state.requestsInFlight).toBe(0);
  });

  it('is idle at once with no request in flight', async () => {
    await expect(new ServingState().whenIdle()).resolves.toBeUndefined();
  });
});
