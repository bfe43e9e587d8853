import {
  Body,
  CallHandler,
  Controller,
  ExecutionContext,
  Injectable,
  Logger,
  Module,
  NestInterceptor,
  Post,
  UseInterceptors,
} from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { AsyncLocalStorage, AsyncResource } from 'node:async_hooks';
import { Observable } from 'rxjs';
import { frameworkErrors } from './errors/framework-errors';
import { HcpFastifyAdapter } from './hcp-fastify-adapter';

const storage = new AsyncLocalStorage<string>();

/** Enters an async context for the rest of the request, as a tracing or tenancy interceptor would. */
@Injectable()
class EnteringInterceptor implements NestInterceptor {
  intercept(_context: ExecutionContext, next: CallHandler): Observable<unknown> {
    return storage.run('entered by the interceptor', () => next.handle());
  }
}

/** Passes the request on, as the audit and idempotency steps do before their handler. */
@Injectable()
class PassingInterceptor implements NestInterceptor {
  intercept(_context: ExecutionContext, next: CallHandler): Observable<unknown> {
    return next.handle();
  }
}

@Controller('echo')
class EchoController {
  @Post()
  @UseInterceptors(EnteringInterceptor, PassingInterceptor)
  async echo(@Body() body: { n: number }) {
    await new Promise((resolve) => setImmediate(resolve));
    return { n: body.n, context: storage.getStore() ?? null };
  }
}

@Module({ controllers: [EchoController], providers: [EnteringInterceptor, PassingInterceptor] })
class EchoModule {}

/**
 * A job-starting request passes Fastify's body parser and Nest's interceptors. Both keep the request's
 * async context; on Node 20 `AsyncResource.bind` also builds two deprecation wrappers per call, which
 * cost ~13 % of the creates per second (bench/README.md, the twenty-sixth session). Fastify ≥ 5.12.6
 * and HCP's patch of Nest's InterceptorsConsumer (patches/) keep the context without it.
 */
describe("the request pipeline's async context", () => {
  let app: NestFastifyApplication;

  beforeAll(async () => {
    app = await NestFactory.create<NestFastifyApplication>(
      EchoModule,
      new HcpFastifyAdapter(frameworkErrors([], new Logger('test'))),
      { logger: false },
    );
    await app.init();
    await app.getHttpAdapter().getInstance().ready();
  });

  afterAll(() => app.close());

  afterEach(() => jest.restoreAllMocks());

  const post = (n: number) =>
    app.inject({ method: 'POST', url: '/echo', payload: { n }, headers: { 'content-type': 'application/json' } });

  it("carries the context an interceptor enters through the next interceptor into the route's handler", async () => {
    const answers = await Promise.all([1, 2, 3].map(post));
    expect(answers.map((a) => a.json())).toEqual([1, 2, 3].map((n) => ({ n, context: 'entered by the interceptor' })));
  });

  it('parses a body and runs interceptors without AsyncResource.bind', async () => {
    const bind = jest.spyOn(AsyncResource.prototype, 'bind');
    const answer = await post(7);
    expect(answer.statusCode).toBe(201);
    expect(answer.json()).toEqual({ n: 7, context: 'entered by the interceptor' });
    expect(bind).not.toHaveBeenCalled();
  });
});
