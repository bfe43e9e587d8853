import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { NestFactory } from '@nestjs/core';
import type { OpenAPIObject } from '@nestjs/swagger';
import { AppModule } from '../../src/app.module';
import { loadConfig } from '../../src/config/hcp-config';
import { HcpFastifyAdapter } from '../../src/http/hcp-fastify-adapter';
import { buildOpenApiDocument } from '../../src/http/openapi';
import { openRuntime } from '../../src/platform/runtime/hcp-runtime';

/**
 * The document HCP serves at /openapi.json, built in this process the way main.ts builds it (the whole
 * application on a real database), without listening or starting any background work.
 */
export async function buildServedOpenApiDocument(databaseUrl: string): Promise<OpenAPIObject> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'hcp-openapi-'));
  const runtime = await openRuntime(
    loadConfig({ DATABASE_URL: databaseUrl, HCP_DATA_DIR: dataDir, LOG_LEVEL: 'warn' }),
  );
  try {
    const app = await NestFactory.create(AppModule.forRoot(runtime), new HcpFastifyAdapter(undefined), {
      bodyParser: false,
      logger: false,
    });
    try {
      return buildOpenApiDocument(app);
    } finally {
      await app.close();
    }
  } finally {
    await runtime.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}
