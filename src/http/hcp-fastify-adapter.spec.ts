import { Controller, Get, Logger, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { request } from 'node:http';
import { HcpFastifyAdapter } from './hcp-fastify-adapter';
import { JsonText } from './json-text';
import { frameworkErrors } from './errors/framework-errors';
import { requestId } from './request/request-id';
import { securityHeaders } from './security-headers';

const OBJECT = { id: 'x', n: 1, text: 'é ü ✓', list: [1, { b: null }] };

@Controller('answers')
class AnswersController {
  @Get('object')
  object() {
    return OBJECT;
  }

  @Get('json-text')
  jsonText() {
    return new JsonText(JSON.stringify(OBJECT));
  }
}

@Module({ controllers: [AnswersController] })
class AnswersModule {}

/** Status, headers (without Date) and body, as the client receives them. */
function answer(port: number, method: string, path: string) {
  return new Promise<{ status?: number; headers: string[]; body: string }>((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path }, (res) => {
      let body = '';
      res.on('data', (d) => {
        body += d;
      });
      res.on('end', () => {
        const raw = res.rawHeaders.flatMap((v, i, all) =>
          i % 2 === 0 && v.toLowerCase() !== 'date' ? [v, all[i + 1]] : [],
        );
        resolve({ status: res.statusCode, headers: raw, body });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

describe("HCP's Fastify adapter", () => {
  let app: NestFastifyApplication;
  let port: number;

  beforeAll(async () => {
    app = await NestFactory.create<NestFastifyApplication>(
      AnswersModule,
      new HcpFastifyAdapter(frameworkErrors([requestId, securityHeaders()], new Logger('test'))),
      {
        logger: false,
      },
    );
    await app.listen(0, '127.0.0.1');
    port = (app.getHttpServer().address() as { port: number }).port;
  });

  afterAll(() => app.close());

  it('sends a JsonText body byte for byte as the object it holds, HEAD included', async () => {
    for (const method of ['GET', 'HEAD']) {
      const text = await answer(port, method, '/answers/json-text');
      expect(text).toEqual(await answer(port, method, '/answers/object'));
      expect(text.headers.slice(0, 2)).toEqual(['content-type', 'application/json; charset=utf-8']);
    }
    expect(JSON.parse((await answer(port, 'GET', '/answers/json-text')).body)).toEqual(OBJECT);
  });

  it('routes as the API always has: without regard to case or a trailing slash', async () => {
    expect((await answer(port, 'GET', '/ANSWERS/Object')).status).toBe(200);
    expect((await answer(port, 'GET', '/answers/object/')).status).toBe(200);
    expect((await answer(port, 'GET', '/answers/none')).status).toBe(404);
  });

  it('answers a URL that is not valid percent-encoding with the envelope, its trace id and the security headers', async () => {
    const bad = await answer(port, 'GET', '/answers/%E0%A4%A');
    const headers = Object.fromEntries(bad.headers.flatMap((v, i, all) => (i % 2 === 0 ? [[v, all[i + 1]]] : [])));
    expect(bad.status).toBe(400);
    expect(JSON.parse(bad.body)).toEqual({
      error: {
        code: 'INVALID_REQUEST',
        message: 'the path is not valid URL encoding',
        trace_id: headers['x-request-id'],
      },
    });
    expect(headers['x-content-type-options']).toBe('nosniff');
  });
});
