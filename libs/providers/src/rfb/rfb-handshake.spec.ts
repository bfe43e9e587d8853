import type { Duplex } from 'node:stream';
import { StreamByteReader } from './byte-reader';
import { createDuplexPair } from './duplex-pair';
import { acceptRfbClient, connectRfbServer } from './rfb-handshake';
import { vncAuthResponse } from './vnc-auth';

/** Reads what arrives on `stream` until it closes. */
function collect(stream: Duplex): Promise<Buffer> {
  const chunks: Buffer[] = [];
  stream.on('data', (c: Buffer) => chunks.push(c));
  return new Promise((resolve) => stream.on('close', () => resolve(Buffer.concat(chunks))));
}

/** A scripted client: version, then the given steps against the server's bytes. */
async function legacyClient(version: string, password: string | undefined, wrong = false) {
  const [serverSide, clientSide] = createDuplexPair();
  const server = acceptRfbClient(serverSide, { password, timeoutMs: 2000 });
  const reader = new StreamByteReader(clientSide);
  expect((await reader.read(12)).toString()).toBe('RFB 003.008\n');
  clientSide.write(`RFB ${version}\n`);
  return { server, reader, clientSide, serverSide, wrong };
}

jest.setTimeout(10_000);

describe('RFB handshake', () => {
  it('connects a client and a server at 3.8 with VNC authentication and leaves both at ClientInit', async () => {
    const [s, c] = createDuplexPair();
    const [server, client] = await Promise.all([
      acceptRfbClient(s, { password: 'pa55word', timeoutMs: 2000 }),
      connectRfbServer(c, { password: 'pa55word', timeoutMs: 2000 }),
    ]);
    expect(server).toEqual({ version: '3.8', security: 'vnc' });
    expect(client).toEqual({ version: '3.8', security: 'vnc' });
    // The next byte the server reads is exactly the client's ClientInit.
    c.write(Buffer.from([1]));
    const next = new StreamByteReader(s);
    expect(await next.readUint8()).toBe(1);
  });

  it('uses security type None when the server has no password', async () => {
    const [s, c] = createDuplexPair();
    const [server, client] = await Promise.all([acceptRfbClient(s), connectRfbServer(c)]);
    expect(server.security).toBe('none');
    expect(client.security).toBe('none');
  });

  it('refuses a wrong password on both sides with auth_failed and a 3.8 reason string', async () => {
    const [s, c] = createDuplexPair();
    const server = acceptRfbClient(s, { password: 'right', timeoutMs: 2000 });
    const client = connectRfbServer(c, { password: 'wrong', timeoutMs: 2000 });
    await expect(server).rejects.toMatchObject({ reason: 'auth_failed' });
    const err = await client.catch((e: Error) => e);
    expect(err).toMatchObject({ reason: 'auth_failed' });
    expect((err as Error).message).not.toMatch(/right|wrong/);
  });

  it('serves a 3.3 client: imposes VNC authentication and answers without a reason', async () => {
    const { server, reader, clientSide } = await legacyClient('003.003', 'secret');
    expect(await reader.readUint32()).toBe(2);
    clientSide.write(vncAuthResponse(await reader.read(16), 'secret'));
    expect(await reader.readUint32()).toBe(0);
    await expect(server).resolves.toEqual({ version: '3.3', security: 'vnc' });
  });

  it('treats an unknown 3.x minor version as 3.3', async () => {
    const { server, reader } = await legacyClient('003.005', undefined);
    expect(await reader.readUint32()).toBe(1);
    await expect(server).resolves.toEqual({ version: '3.3', security: 'none' });
  });

  it('serves a 3.7 client: a list to pick from, no SecurityResult after None', async () => {
    const { server, reader, clientSide } = await legacyClient('003.007', undefined);
    expect([...(await reader.read(2))]).toEqual([1, 1]);
    clientSide.write(Buffer.from([1]));
    await expect(server).resolves.toEqual({ version: '3.7', security: 'none' });
    clientSide.write(Buffer.from([0]));
    reader.release();
    expect(clientSide.read()).toBeNull();
  });

  it('sends a 3.7 client only the failed SecurityResult on a wrong response', async () => {
    const { server, reader, clientSide } = await legacyClient('003.007', 'secret');
    expect([...(await reader.read(2))]).toEqual([1, 2]);
    clientSide.write(Buffer.from([2]));
    clientSide.write(vncAuthResponse(await reader.read(16), 'other'));
    await expect(server).rejects.toMatchObject({ reason: 'auth_failed' });
    expect(await reader.readUint32()).toBe(1);
    await expect(reader.read(1)).rejects.toMatchObject({ reason: 'closed' });
  });

  it('refuses a client that picks a type it was not offered', async () => {
    const { server, reader, clientSide } = await legacyClient('003.008', 'secret');
    await reader.read(2);
    clientSide.write(Buffer.from([1]));
    await expect(server).rejects.toMatchObject({ reason: 'unsupported_security' });
    expect(await reader.readUint32()).toBe(1);
  });

  it('refuses a peer that does not speak RFB', async () => {
    const [s, c] = createDuplexPair();
    const server = acceptRfbClient(s, { timeoutMs: 2000 });
    c.write('GET / HTTP/1.1\r\n');
    await expect(server).rejects.toMatchObject({ reason: 'protocol' });
  });

  it('times out a silent peer and closes the stream', async () => {
    const [s, c] = createDuplexPair();
    const closed = collect(c);
    await expect(connectRfbServer(s, { timeoutMs: 50 })).rejects.toMatchObject({ reason: 'timeout' });
    await closed;
    expect(s.destroyed).toBe(true);
  });

  it('reports a peer that closes mid-handshake as closed', async () => {
    const [s, c] = createDuplexPair();
    const client = connectRfbServer(c, { password: 'x', timeoutMs: 2000 });
    s.write('RFB 003.008\n');
    s.destroy();
    await expect(client).rejects.toMatchObject({ reason: 'closed' });
  });

  it('refuses a server that asks for VNC authentication when no password is known', async () => {
    const [s, c] = createDuplexPair();
    const server = acceptRfbClient(s, { password: 'secret', timeoutMs: 2000 });
    await expect(connectRfbServer(c, { timeoutMs: 2000 })).rejects.toMatchObject({ reason: 'unsupported_security' });
    await expect(server).rejects.toBeDefined();
  });

  it('answers a 3.3 server with 3.3 and reports its refusal as a protocol failure', async () => {
    const [s, c] = createDuplexPair();
    const client = connectRfbServer(c, { timeoutMs: 2000 });
    const reader = new StreamByteReader(s);
    s.write('RFB 003.003\n');
    expect((await reader.read(12)).toString()).toBe('RFB 003.003\n');
    const reason = Buffer.from('too many connections');
    s.write(Buffer.concat([Buffer.from([0, 0, 0, 0, 0, 0, 0, reason.length]), reason]));
    await expect(client).rejects.toMatchObject({ reason: 'protocol' });
  });
});
