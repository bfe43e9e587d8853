import { HcpError } from '../errors';
import { ConsoleSessionEvent } from './console-session.events';
import { createHcpUpcasters } from '../hcp-events';
import {
  ConsoleSessionCommand,
  ConsoleSessionState,
  consoleConnectRefusal,
  consoleSessionIsOver,
  decideConsoleSession,
  evolveConsoleSession,
} from './console-session.state-machine';

const T0 = new Date('2026-12-02T10:00:00.000Z');
const at = (ms: number) => new Date(T0.getTime() + ms);
const DIGEST = 'a'.repeat(64);

const open: ConsoleSessionCommand = {
  type: 'open',
  session_id: 's-1',
  project_id: 'p-1',
  vm_id: 'vm-1',
  opened_by: 'alice',
  console_type: 'vnc',
  token_sha256: DIGEST,
  now: T0,
  connect_timeout_ms: 60_000,
  max_duration_ms: 3_600_000,
};

function run(commands: ConsoleSessionCommand[]): { state: ConsoleSessionState | null; last: ConsoleSessionEvent[] } {
  let state: ConsoleSessionState | null = null;
  let last: ConsoleSessionEvent[] = [];
  for (const c of commands) {
    last = decideConsoleSession(state, c);
    state = last.reduce<ConsoleSessionState | null>((s, e) => evolveConsoleSession(s, e, T0.toISOString()), state);
  }
  return { state, last };
}

const connect = (ms: number, digest = DIGEST): ConsoleSessionCommand => ({
  type: 'connect',
  token_sha256: digest,
  now: at(ms),
  client_address: '192.0.2.7',
});
const close: ConsoleSessionCommand = {
  type: 'close',
  reason: 'client_closed',
  bytes_to_client: 10,
  bytes_to_provider: 5,
};

describe('console session', () => {
  it('opens awaiting its one connection until the connect timeout', () => {
    const { state, last } = run([open]);
    expect(last.map((e) => e.type)).toEqual(['ConsoleSessionOpened']);
    expect(state).toMatchObject({
      status: 'awaiting_connection',
      connect_by: at(60_000).toISOString(),
      token_sha256: DIGEST,
    });
  });

  it('refuses to open the same session twice', () => {
    expect(() => run([open, open])).toThrow(HcpError);
  });

  it('connects with the right token before the timeout and ends at the maximum length from then', () => {
    const { state, last } = run([open, connect(59_000)]);
    expect(last).toEqual([
      expect.objectContaining({
        type: 'ConsoleSessionConnected',
        data: expect.objectContaining({ ends_by: at(59_000 + 3_600_000).toISOString() }),
      }),
    ]);
    expect(state!.status).toBe('connected');
  });

  it('records a second use of the token while the session is connected, naming the caller address', () => {
    expect(run([open, connect(1), connect(2)]).last).toEqual([
      expect.objectContaining({
        type: 'ConsoleSessionRefused',
        version: 2,
        data: expect.objectContaining({ reason: 'token_used', client_address: '192.0.2.7' }),
      }),
    ]);
  });

  it('refuses a second use of the token after the session closed without recording anything', () => {
    const { state, last } = run([open, connect(1), close, connect(3)]);
    expect(last).toEqual([]);
    expect(consoleConnectRefusal(state!, DIGEST, at(3))).toBe('token_used');
  });

  it('refuses a token after the connect timeout without recording anything', () => {
    const { state, last } = run([open, connect(60_001)]);
    expect(last).toEqual([]);
    expect(state!.status).toBe('awaiting_connection');
    expect(consoleConnectRefusal(state!, DIGEST, at(60_001))).toBe('token_expired');
  });

  it('refuses a wrong token without revealing that the session was used or expired', () => {
    expect(run([open, connect(1, 'b'.repeat(64))]).last[0].data).toMatchObject({ reason: 'token_invalid' });
    expect(run([open, connect(1), connect(2, 'b'.repeat(64))]).last[0].data).toMatchObject({ reason: 'token_invalid' });
    const expired = run([open]).state!;
    expect(consoleConnectRefusal(expired, 'short', at(90_000))).toBe('token_invalid');
  });

  it('records no wrong token once the session is over, closed or expired', () => {
    expect(run([open, connect(1), close, connect(2, 'b'.repeat(64))]).last).toEqual([]);
    expect(run([open, connect(90_000, 'b'.repeat(64))]).last).toEqual([]);
  });

  it('is over when closed, past connect_by unconnected, or past ends_by connected', () => {
    const opened = run([open]).state!;
    expect(consoleSessionIsOver(opened, at(60_000))).toBe(false);
    expect(consoleSessionIsOver(opened, at(60_001))).toBe(true);
    const connected = run([open, connect(1)]).state!;
    expect(consoleSessionIsOver(connected, at(3_600_001))).toBe(false);
    expect(consoleSessionIsOver(connected, at(3_600_002))).toBe(true);
    expect(consoleSessionIsOver(run([open, close]).state!, at(1))).toBe(true);
  });

  it('reads a v1 refusal (no caller address) as v2 with a null address', () => {
    const v1 = {
      type: 'ConsoleSessionRefused',
      version: 1,
      data: { session_id: 's-1', project_id: 'p-1', vm_id: 'vm-1', reason: 'token_invalid' },
    };
    expect(createHcpUpcasters().upcast(v1)).toEqual({
      type: 'ConsoleSessionRefused',
      version: 2,
      data: { ...v1.data, client_address: null },
    });
  });

  it('closes once, whatever closes it again', () => {
    const closed = run([open, connect(1), close]);
    expect(closed.state).toMatchObject({ status: 'closed', close_reason: 'client_closed' });
    expect(run([open, connect(1), close, { ...close, reason: 'session_expired' }]).last).toEqual([]);
  });

  it('can be closed before it connected (the VM stopped while the token waited)', () => {
    expect(run([open, { ...close, reason: 'vm_not_running' }]).state).toMatchObject({
      status: 'closed',
      close_reason: 'vm_not_running',
    });
  });

  it('knows no session that was never opened', () => {
    expect(() => run([connect(1)])).toThrow(expect.objectContaining({ code: 'NOT_FOUND' }));
  });

  it('names the session, project and VM on every event', () => {
    for (const commands of [[open], [open, connect(1)], [open, connect(1), close], [open, connect(1), connect(2)]]) {
      expect(run(commands).last[0].data).toMatchObject({ session_id: 's-1', project_id: 'p-1', vm_id: 'vm-1' });
    }
  });
});
