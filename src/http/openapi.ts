import { INestApplication } from '@nestjs/common';
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
import { ValidationTypes } from 'class-validator';
import { validationMetadatasToSchemas } from 'class-validator-jsonschema';
import { INTERNAL_PATH_PREFIX } from '@hcp/auth';

/** Publishes the API as OpenAPI 3 at /openapi.json with browsable docs at /docs (no token needed). */
export function publishOpenApi(app: INestApplication): void {
  const config = new DocumentBuilder()
    .setTitle('HCP, the Hypervisor Control Plane')
    .setDescription(
      'One provider-agnostic compute API. Errors use the envelope { error: { code, message, details?, trace_id } }.',
    )
    .setVersion('v1')
    .addBearerAuth({ type: 'http', scheme: 'bearer', bearerFormat: 'JWT' })
    .addSecurityRequirements('bearer')
    .build();
  const document = SwaggerModule.createDocument(app, config);
  // The internal router (host agents, /internal/v1) is no part of the public API: its contract is
  // libs/host-protocol, shared by HCP and the agent.
  for (const path of Object.keys(document.paths))
    if (path.startsWith(INTERNAL_PATH_PREFIX)) delete document.paths[path];
  // Body and query DTOs are described once, by their class-validator rules; Swagger's references to them
  // (by class name) then resolve to the very rules the validation pipe enforces.
  const schemas = validationMetadatasToSchemas({
    refPointerPrefix: '#/components/schemas/',
    // A custom check (ssh keys, ...) has no JSON Schema form; the library's default would point at the
    // property's design type (`Array`), a schema that does not exist. The other decorators describe it.
    additionalConverters: { [ValidationTypes.CUSTOM_VALIDATION]: () => ({}) },
  });
  // Free-form objects (tags, metadata, settings) are typed `Record`, which reflects as `Object`.
  schemas.Object = { type: 'object', additionalProperties: true };
  document.components = {
    ...document.components,
    schemas: { ...document.components?.schemas, ...(schemas as Record<string, object>) },
  };
  SwaggerModule.setup('docs', app, document, { jsonDocumentUrl: 'openapi.json' });
}
