import { Controller, Get, HttpCode, INestApplication, Module, Post } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import { request } from 'node:http';
import { LeanExpressAdapter } from './lean-express-adapter';
import { JsonText } from './json-text';

const OBJECT = { id: 'x', n: 1, text: 'é ü ✓', list: [1, { b: null }] };

@Controller()
class AnswersController {
  @Get('object')
  object() {
    return OBJECT;
  }

  @Get('json-text')
  jsonText() {
    return new JsonText(JSON.stringify(OBJECT));
  }

  @Get('array')
  array() {
    return [1, 2];
  }

  @Post('accepted')
  @HttpCode(202)
  accepted() {
    return { job_id: 'j' };
  }

  @Get('text')
  text() {
    return 'text';
  }

  @Get('big')
  big() {
    return { items: Array.from({ length: 200 }, (_, i) => ({ i, t: 'x'.repeat(20) })) };
  }
}

@Module({ controllers: [AnswersController] })
class AnswersModule {}

/** Status, headers in order (without Date) and body, as the client receives them. */
function answer(port: number, method: string, path: string, headers: Record<string, string> = {}) {
  return new Promise<{ status?: number; headers: string[]; body: string }>((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path, headers }, (res) => {
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

async function listening(adapter: ExpressAdapter): Promise<{ app: INestApplication; port: number }> {
  const app: INestApplication = await NestFactory.create(AnswersModule, adapter, { logger: false });
  app.getHttpAdapter().getInstance().disable('x-powered-by');
  await app.listen(0, '127.0.0.1');
  return { app, port: (app.getHttpServer().address() as { port: number }).port };
}

async function answersOf(adapter: ExpressAdapter) {
  const { app, port } = await listening(adapter);
  try {
    const answers = [];
    for (const [method, path] of [
      ['GET', '/object'],
      ['GET', '/array'],
      ['POST', '/accepted'],
      ['GET', '/text'],
      ['GET', '/big'],
      ['HEAD', '/object'],
    ])
      answers.push(await answer(port, method, path));
    const etag = answers[0].headers[answers[0].headers.indexOf('ETag') + 1];
    answers.push(await answer(port, 'GET', '/object', { 'if-none-match': etag }));
    answers.push(await answer(port, 'GET', '/object', { 'if-none-match': 'W/"other"' }));
    return answers;
  } finally {
    await app.close();
  }
}

describe('the lean Express adapter', () => {
  it('answers the same statuses, headers in the same order and bodies as Express', async () => {
    const express = await answersOf(new ExpressAdapter());
    const lean = await answersOf(new LeanExpressAdapter());
    expect(lean).toEqual(express);
    expect(express[6].status).toBe(304); // the conditional request is answered as Express answers it
    expect(express[0].headers.slice(0, 4)).toEqual([
      'Content-Type',
      'application/json; charset=utf-8',
      'Content-Length',
      String(Buffer.byteLength(express[0].body)),
    ]);
  });

  it('sends a JsonText body as Express sends the object it holds, conditional requests and HEAD included', async () => {
    const { app, port } = await listening(new LeanExpressAdapter());
    try {
      const object = await answer(port, 'GET', '/object');
      const etag = object.headers[object.headers.indexOf('ETag') + 1];
      for (const [method, headers] of [
        ['GET', {}],
        ['HEAD', {}],
        ['GET', { 'if-none-match': etag }],
        ['GET', { 'if-none-match': 'W/"other"' }],
      ] as const)
        expect(await answer(port, method, '/json-text', headers)).toEqual(
          await answer(port, method, '/object', headers),
        );
      expect((await answer(port, 'GET', '/json-text', { 'if-none-match': etag })).status).toBe(304);
    } finally {
      await app.close();
    }
  });
});
