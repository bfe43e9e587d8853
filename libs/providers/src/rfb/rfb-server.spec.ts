import { once } from 'node:events';
import { StreamByteReader } from './byte-reader';
import { createDuplexPair } from './duplex-pair';
import { connectRfbServer } from './rfb-handshake';
import { DEFAULT_PIXEL_FORMAT, encodePixelFormat, rawRectangle, type PixelFormat } from './rfb-pixels';
import { serveRfb, type RfbServerOptions } from './rfb-server';

jest.setTimeout(10_000);

const u16 = (n: number) => Buffer.from([n >> 8, n & 0xff]);
const s32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeInt32BE(n, 0);
  return b;
};
const updateRequest = (incremental: boolean, x: number, y: number, w: number, h: number) =>
  Buffer.concat([Buffer.from([3, incremental ? 1 : 0]), u16(x), u16(y), u16(w), u16(h)]);

async function connected(options: RfbServerOptions = {}) {
  const [serverSide, client] = createDuplexPair();
  const session = serveRfb(serverSide, { password: 'sekrit', width: 64, height: 40, name: 'vm-test', ...options });
  await connectRfbServer(client, { password: 'sekrit', timeoutMs: 2000 });
  const reader = new StreamByteReader(client);
  client.write(Buffer.from([1])); // ClientInit, shared
  const init = await reader.read(24);
  const name = (await reader.read(init.readUInt32BE(20))).toString();
  return { session, client, reader, init, name };
}

async function readUpdate(reader: StreamByteReader, bytesPerPixel: number) {
  const head = await reader.read(4);
  expect(head[0]).toBe(0);
  const rects = [];
  for (let i = 0; i < head.readUInt16BE(2); i++) {
    const r = await reader.read(12);
    const [x, y, w, h] = [r.readUInt16BE(0), r.readUInt16BE(2), r.readUInt16BE(4), r.readUInt16BE(6)];
    expect(r.readInt32BE(8)).toBe(0);
    rects.push({ x, y, w, h, pixels: await reader.read(w * h * bytesPerPixel) });
  }
  return rects;
}

describe('RFB server', () => {
  it('sends ServerInit with the framebuffer size, a 32 bpp true-colour format and the desktop name', async () => {
    const { init, name, session, client } = await connected();
    expect(init.readUInt16BE(0)).toBe(64);
    expect(init.readUInt16BE(2)).toBe(40);
    expect(init.subarray(4, 20)).toEqual(encodePixelFormat(DEFAULT_PIXEL_FORMAT));
    expect(name).toBe('vm-test');
    expect(session.connected).toBe(true);
    client.destroy();
  });

  it('answers a full update request with the Raw test picture in the default format', async () => {
    const { client, reader } = await connected();
    client.write(updateRequest(false, 0, 0, 64, 40));
    const [rect] = await readUpdate(reader, 4);
    expect(rect).toMatchObject({ x: 0, y: 0, w: 64, h: 40 });
    expect(rect.pixels).toEqual(rawRectangle(0, 0, 64, 40, 64, 40, DEFAULT_PIXEL_FORMAT));
    client.destroy();
  });

  it('honours SetPixelFormat (16 bpp big-endian) and clips requests to the framebuffer', async () => {
    const { client, reader } = await connected();
    const rgb565: PixelFormat = {
      ...DEFAULT_PIXEL_FORMAT,
      bitsPerPixel: 16,
      depth: 16,
      bigEndian: true,
      redMax: 31,
      greenMax: 63,
      blueMax: 31,
      redShift: 11,
      greenShift: 5,
      blueShift: 0,
    };
    client.write(Buffer.concat([Buffer.from([0, 0, 0, 0]), encodePixelFormat(rgb565)]));
    client.write(updateRequest(false, 60, 30, 100, 100));
    const [rect] = await readUpdate(reader, 2);
    expect(rect).toMatchObject({ x: 60, y: 30, w: 4, h: 10 });
    expect(rect.pixels).toEqual(rawRectangle(60, 30, 4, 10, 64, 40, rgb565));
    client.destroy();
  });

  it('reads input, encodings and clipboard messages by their lengths and stays in step', async () => {
    const { client, reader, session } = await connected();
    client.write(Buffer.concat([Buffer.from([2, 0]), u16(3), s32(0), s32(-223), s32(-258)]));
    client.write(Buffer.from([4, 1, 0, 0, 0, 0, 0xff, 0x0d]));
    client.write(Buffer.concat([Buffer.from([5, 1]), u16(10), u16(20)]));
    const text = Buffer.from('clipboard text');
    client.write(Buffer.concat([Buffer.from([6, 0, 0, 0]), s32(text.length), text]));
    client.write(Buffer.concat([Buffer.from([6, 0, 0, 0]), s32(-4), Buffer.from([0, 0, 0, 1])]));
    // Deferred: nothing changes on a still picture.
    client.write(updateRequest(true, 0, 0, 64, 40));
    client.write(updateRequest(false, 0, 0, 2, 2));
    const [rect] = await readUpdate(reader, 4);
    expect(rect).toMatchObject({ w: 2, h: 2 });
    expect(session.stats).toEqual({
      updates: 1,
      keyEvents: 1,
      pointerEvents: 1,
      cutTextBytes: text.length + 4,
      encodings: [0, -223, -258],
    });
    client.destroy();
  });

  it('reports a client that disconnects', async () => {
    const { client, session } = await connected();
    client.destroy();
    await expect(session.ended).resolves.toBe('client_closed');
  });

  it('closes the connection when closed from outside', async () => {
    const { client, session } = await connected();
    client.resume();
    const clientClosed = once(client, 'close');
    session.close();
    await expect(session.ended).resolves.toBe('server_closed');
    await clientClosed;
  });

  it('drops a client that sends a message it never announced support for', async () => {
    const { client, session } = await connected();
    client.resume();
    client.write(Buffer.from([250, 0, 0, 0]));
    await expect(session.ended).resolves.toBe('protocol_error');
  });

  it('ends the session of a client that fails authentication', async () => {
    const [serverSide, client] = createDuplexPair();
    const session = serveRfb(serverSide, { password: 'right' });
    await expect(connectRfbServer(client, { password: 'wrong', timeoutMs: 2000 })).rejects.toMatchObject({
      reason: 'auth_failed',
    });
    await expect(session.ended).resolves.toBe('handshake_failed');
  });
});
