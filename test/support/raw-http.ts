import { connect, Socket } from 'node:net';

export interface RawResponse {
  status: number;
  /** Header names in lower case. */
  headers: Record<string, string>;
  body: any;
}

/**
 * One HTTP/1.1 connection held open by the test, to send requests on the same keep-alive connection
 * (fetch would pick its own) or to leave a request half-sent.
 */
export class RawConnection {
  private buffer = Buffer.alloc(0);
  private waiting: (() => void) | null = null;
  readonly closed: Promise<void>;

  private constructor(private readonly socket: Socket) {
    socket.on('data', (chunk: Buffer) => {
      this.buffer = Buffer.concat([this.buffer, chunk]);
      this.waiting?.();
    });
    this.closed = new Promise((resolve) => socket.once('close', () => resolve()));
    void this.closed.then(() => this.waiting?.());
  }

  static async open(baseUrl: string): Promise<RawConnection> {
    const { hostname, port } = new URL(baseUrl);
    const socket = connect(Number(port), hostname);
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
    socket.on('error', () => undefined);
    return new RawConnection(socket);
  }

  /** Sends a request's head and `body` (all of it, unless `declaredLength` says there is more to come). */
  send(method: string, path: string, headers: Record<string, string> = {}, body = '', declaredLength?: number): void {
    const head = [`${method} ${path} HTTP/1.1`, 'Host: 127.0.0.1', 'Connection: keep-alive'];
    for (const [name, value] of Object.entries(headers)) head.push(`${name}: ${value}`);
    if (body || declaredLength !== undefined) head.push(`Content-Length: ${declaredLength ?? Buffer.byteLength(body)}`);
    this.socket.write(`${head.join('\r\n')}\r\n\r\n${body}`);
  }

  async request(method: string, path: string, headers: Record<string, string> = {}): Promise<RawResponse> {
    this.send(method, path, headers);
    return this.response();
  }

  /** The next response on the connection (answers carry Content-Length). */
  async response(): Promise<RawResponse> {
    for (;;) {
      const parsed = this.parse();
      if (parsed) return parsed;
      if (this.socket.destroyed) throw new Error('the connection closed before a response came');
      await new Promise<void>((resolve) => (this.waiting = resolve));
      this.waiting = null;
    }
  }

  close(): void {
    this.socket.destroy();
  }

  private parse(): RawResponse | null {
    const end = this.buffer.indexOf('\r\n\r\n');
    if (end < 0) return null;
    const [statusLine, ...lines] = this.buffer.subarray(0, end).toString('latin1').split('\r\n');
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(':');
      headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    const length = Number(headers['content-length'] ?? 0);
    if (this.buffer.length < end + 4 + length) return null;
    const text = this.buffer.subarray(end + 4, end + 4 + length).toString('utf8');
    this.buffer = this.buffer.subarray(end + 4 + length);
    let body: unknown = text;
    try {
      body = text ? JSON.parse(text) : null;
    } catch {
      // not JSON: keep the text
    }
    return { status: Number(statusLine.split(' ')[1]), headers, body };
  }
}
