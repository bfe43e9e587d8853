import { FastifyAdapter } from '@nestjs/platform-fastify';
import type { FastifyReply, FastifyServerOptions } from 'fastify';
import { JSON_CONTENT_TYPE, JsonText } from './json-text';
import { LIMITS } from './validation/limits';

/**
 * Nest on Fastify, configured as HCP's API was on Express: routes match without regard to case or a
 * trailing slash, a path parameter may be as long as the URL, the server's timeouts are Node's
 * defaults, and HCP's own drain (the availability gate) answers requests while it stops. What Fastify
 * refuses before routing goes to `frameworkErrors`. A `JsonText` body is sent as the JSON it holds.
 */
export class HcpFastifyAdapter extends FastifyAdapter {
  constructor(frameworkErrors: FastifyServerOptions['frameworkErrors']) {
    super({
      frameworkErrors,
      bodyLimit: LIMITS.bodyBytes,
      routerOptions: { caseSensitive: false, ignoreTrailingSlash: true, maxParamLength: 8192 },
      keepAliveTimeout: 5_000,
      requestTimeout: 300_000,
      return503OnClosing: false,
    });
  }

  override reply(response: FastifyReply, body: unknown, statusCode?: number): FastifyReply {
    if (!(body instanceof JsonText)) return super.reply(response, body, statusCode);
    if (statusCode) response.status(statusCode);
    if (response.getHeader('content-type') === undefined) response.type(JSON_CONTENT_TYPE);
    return response.send(body.text);
  }
}
