import { once } from 'node:events';
import { createDuplexPair } from './duplex-pair';

describe('createDuplexPair', () => {
  it('carries what one side writes to the other, both ways', async () => {
    const [a, b] = createDuplexPair();
    a.write('ping');
    expect(((await once(b, 'data')) as [Buffer])[0].toString()).toBe('ping');
    b.write('pong');
    expect(((await once(a, 'data')) as [Buffer])[0].toString()).toBe('pong');
  });

  it('ends the other side when one side ends', async () => {
    const [a, b] = createDuplexPair();
    b.resume();
    a.end();
    await once(b, 'end');
  });

  it('delivers what was sent, then closes the other side, when one side is destroyed', async () => {
    const [a, b] = createDuplexPair();
    const received: Buffer[] = [];
    b.on('data', (chunk: Buffer) => received.push(chunk));
    const closed = once(b, 'close');
    a.write('last words');
    a.destroy();
    await closed;
    expect(Buffer.concat(received).toString()).toBe('last words');
    expect(b.destroyed).toBe(true);
  });
});
