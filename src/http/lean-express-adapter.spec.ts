import { Controller, Get, HttpCode, INestApplication, Module, Post } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import { request } from 'node:http';
import { LeanExpressAdapter } from './lean-express-adapter';

@Controller()
class AnswersController {
  @Get('object')
  object() {
    return { id: 'x', n: 1, text: 'é ü ✓', list: [1, { b: null }] };
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

async function answersOf(adapter: ExpressAdapter) {
  const app: INestApplication = await NestFactory.create(AnswersModule, adapter, { logger: false });
  app.getHttpAdapter().getInstance().disable('x-powered-by');
  await app.listen(0, '127.0.0.1');
  const { port } = app.getHttpServer().address() as { port: number };
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
});
