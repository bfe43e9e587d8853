import { StreamableFile } from '@nestjs/common';
import { ExpressAdapter } from '@nestjs/platform-express';
import type { Request, Response } from 'express';
import { JsonText } from './json-text';

type ETagOf = (body: Buffer, encoding?: BufferEncoding) => string | undefined;

/**
 * Nest's Express adapter, answering a handler's JSON body without Express's `res.json`/`res.send`
 * machinery: that looks the Content-Type up in the MIME table, parses and formats it again for its
 * charset, and asks the app's settings for the ETag function, on every answer. The answer is the same
 * bytes and headers, in the same order (Content-Type, Content-Length, the ETag of Express's own ETag
 * function). Whatever could make Express answer differently (a HEAD, a conditional request that may be
 * answered 304, a 204/205, a Content-Type or ETag set beforehand, a body that is not a plain object)
 * goes through Express as before. A `JsonText` body is sent as the JSON it holds, either way.
 */
export class LeanExpressAdapter extends ExpressAdapter {
  /** Express's settings, read at the first answer (they are set before listening, never after). */
  private settings: { etagOf: ETagOf | undefined; plainJson: boolean } | undefined;

  override reply(response: Response, body: unknown, statusCode?: number): unknown {
    const settings = this.settingsOf(response);
    if (!settings.plainJson || !answersPlainJson(response, body, statusCode)) {
      if (!(body instanceof JsonText)) return super.reply(response, body, statusCode);
      // Express's own path for a string, told it is JSON (res.send would call a string HTML).
      if (response.getHeader('Content-Type') === undefined)
        response.setHeader('Content-Type', 'application/json; charset=utf-8');
      return super.reply(response, body.text, statusCode);
    }
    if (statusCode) response.statusCode = statusCode;
    const chunk = Buffer.from(body instanceof JsonText ? body.text : JSON.stringify(body), 'utf8');
    response.setHeader('Content-Type', 'application/json; charset=utf-8');
    response.setHeader('Content-Length', String(chunk.length));
    const etag = settings.etagOf?.(chunk);
    if (etag) response.setHeader('ETag', etag);
    response.end(chunk);
    return response;
  }

  private settingsOf(response: Response) {
    if (!this.settings) {
      const app = response.app;
      this.settings = {
        etagOf: app.get('etag fn') as ETagOf | undefined,
        // Express's JSON settings, when set, change the text (indentation, replacer, escaping).
        plainJson: !app.get('json replacer') && !app.get('json spaces') && !app.get('json escape'),
      };
    }
    return this.settings;
  }
}

function answersPlainJson(response: Response, body: unknown, statusCode?: number): boolean {
  if (typeof body !== 'object' || body === null || ArrayBuffer.isView(body) || body instanceof StreamableFile)
    return false;
  const status = statusCode ?? response.statusCode;
  if (status === 204 || status === 205 || status === 304) return false;
  const req = response.req as Request;
  if (req.method === 'HEAD' || req.headers['if-none-match'] !== undefined) return false;
  if (req.headers['if-modified-since'] !== undefined) return false;
  return response.getHeader('Content-Type') === undefined && response.getHeader('ETag') === undefined;
}
