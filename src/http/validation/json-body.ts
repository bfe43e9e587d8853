import { brotliDecompressSync, gunzipSync, inflateSync } from 'node:zlib';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { invalidRequest } from '@hcp/domain';
import { notJson } from './media-type';

type Decompress = (body: Buffer, options: { maxOutputLength: number }) => Buffer;
const DECOMPRESS: Record<string, Decompress> = { gzip: gunzipSync, deflate: inflateSync, br: brotliDecompressSync };

/**
 * Request bodies are JSON, parsed by HCP's one parser (Fastify's own ones removed): at most `limitBytes`
 * (also once decompressed), UTF-8, an object or an array at the top (a bare string or number is no body
 * of any HCP route), and `{}` when empty. `requireJsonBody` has already refused any other media type
 * before the body is read; the parser for the rest only guards that nothing else is ever read.
 */
export function acceptJsonBodies(fastify: FastifyInstance, limitBytes: number): void {
  fastify.removeAllContentTypeParsers();
  fastify.addContentTypeParser('application/json', { parseAs: 'buffer', bodyLimit: limitBytes }, (req, body, done) => {
    try {
      done(null, parseJsonBody(req, body as Buffer, limitBytes));
    } catch (err) {
      done(err as Error, undefined);
    }
  });
  fastify.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: limitBytes }, (req, body, done) => {
    if ((body as Buffer).length === 0) done(null, undefined);
    else done(notJson(req), undefined);
  });
}

export function parseJsonBody(req: Pick<FastifyRequest, 'headers'>, raw: Buffer, limitBytes: number): unknown {
  const charset = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(req.headers['content-type'] ?? '')?.[1]?.toLowerCase();
  if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8')
    throw invalidRequest(`unsupported charset "${charset.slice(0, 32).toUpperCase()}"`);
  const text = decompressed(req, raw, limitBytes).toString('utf8');
  if (text.trim() === '') return {};
  const first = /^[\s\uFEFF]*(.)/.exec(text)?.[1];
  if (first !== '{' && first !== '[') throw invalidRequest('request body is not valid JSON');
  try {
    return JSON.parse(text);
  } catch {
    throw invalidRequest('request body is not valid JSON');
  }
}

function decompressed(req: Pick<FastifyRequest, 'headers'>, raw: Buffer, limitBytes: number): Buffer {
  const encoding = String(req.headers['content-encoding'] ?? 'identity')
    .trim()
    .toLowerCase();
  if (encoding === 'identity' || encoding === '') return raw;
  const decompress = DECOMPRESS[encoding];
  if (!decompress) throw invalidRequest(`unsupported content encoding "${encoding.slice(0, 32)}"`);
  try {
    return decompress(raw, { maxOutputLength: limitBytes });
  } catch (err) {
    if ((err as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') throw invalidRequest('request entity too large');
    throw invalidRequest('request body could not be decompressed');
  }
}
