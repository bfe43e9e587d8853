import { StreamByteReader } from './byte-reader';
import { createDuplexPair } from './duplex-pair';
import { RfbHandshakeError } from './rfb-error';

describe('StreamByteReader', () => {
  it('reads exact sizes across and within chunks', async () => {
    const [a, b] = createDuplexPair();
    const reader = new StreamByteReader(b);
    a.write(Buffer.from([1, 2]));
    a.write(Buffer.from([3, 4, 5, 6, 7]));
    expect([...(await reader.read(3))]).toEqual([1, 2, 3]);
    expect(await reader.readUint8()).toBe(4);
    const later = reader.readUint32();
    a.write(Buffer.from([8]));
    expect(await later).toBe(0x05060708);
  });

  it('rejects a read the stream cannot complete because it closed', async () => {
    const [a, b] = createDuplexPair();
    const reader = new StreamByteReader(b);
    a.write(Buffer.from([1]));
    const read = reader.read(2);
    a.end();
    await expect(read).rejects.toMatchObject({ reason: 'closed' });
  });

  it('rejects the pending read with the error it is failed with', async () => {
    const [, b] = createDuplexPair();
    const reader = new StreamByteReader(b);
    const read = reader.read(1);
    reader.fail(new RfbHandshakeError('timeout', 'too slow'));
    await expect(read).rejects.toMatchObject({ reason: 'timeout' });
  });

  it('puts unread bytes back and leaves the stream paused on release', async () => {
    const [a, b] = createDuplexPair();
    const reader = new StreamByteReader(b);
    a.write(Buffer.from('HEADrest-of-it'));
    expect((await reader.read(4)).toString()).toBe('HEAD');
    reader.release();
    expect(b.isPaused()).toBe(true);
    a.write(Buffer.from('+more'));
    const received: Buffer[] = [];
    b.on('data', (chunk: Buffer) => received.push(chunk));
    await new Promise((resolve) => setImmediate(resolve));
    expect(received).toEqual([]);
    b.resume();
    await new Promise((resolve) => setImmediate(resolve));
    expect(Buffer.concat(received).toString()).toBe('rest-of-it+more');
    await expect(reader.read(1)).rejects.toThrow('released');
  });
});
