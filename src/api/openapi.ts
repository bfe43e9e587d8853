import { INestApplication } from '@nestjs/common';
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';

/** Publishes the API as OpenAPI 3 at /openapi.json with browsable docs at /docs (no token needed). */
export function publishOpenApi(app: INestApplication): void {
  const config = new DocumentBuilder()
    .setTitle('HCP, the Hypervisor Control Plane')
    .setDescription('One provider-agnostic compute API. Errors use the envelope { error: { code, message, details?, trace_id } }.')
    .setVersion('v1')
    .addBearerAuth({ type: 'http', scheme: 'bearer', bearerFormat: 'JWT' })
    .addSecurityRequirements('bearer')
    .build();
  const document = SwaggerModule.createDocument(app, config);
  SwaggerModule.setup('docs', app, document, { jsonDocumentUrl: 'openapi.json' });
}
