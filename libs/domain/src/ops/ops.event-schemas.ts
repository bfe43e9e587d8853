import { z } from 'zod/v4';
import { EventSchema, idSchema, schemaFor } from '../events/event-schemas';
import {
  ClusterSpec,
  FlavorSpec,
  ImageSpec,
  OPS_KINDS,
  OpsKind,
  OpsResourceDeleted,
  OpsResourceRegistered,
  OpsSpecs,
  PROVIDER_TYPES,
  ProviderSpec,
  ZoneSpec,
} from './ops-resources';

const anything = z.record(z.string(), z.unknown());

const SPEC_SCHEMAS: { [K in OpsKind]: z.ZodType<OpsSpecs[K], unknown> } = {
  provider: z.object({
    name: z.string().min(1),
    type: z.enum(PROVIDER_TYPES),
    endpoint: z.string().nullable(),
    tls: z.object({ ca_pem: z.string().optional(), fingerprint_sha256: z.string().optional() }),
    settings: anything,
    has_credentials: z.boolean(),
  }) satisfies z.ZodType<ProviderSpec, unknown>,
  cluster: z.object({
    name: z.string().min(1),
    provider_id: idSchema,
    placement_hints: anything,
    capacity: z.object({ vcpus: z.number(), ram_mb: z.number(), disk_gb: z.number() }).nullable(),
    enabled: z.boolean(),
    capabilities: anything,
  }) satisfies z.ZodType<ClusterSpec, unknown>,
  zone: z.object({
    name: z.string().min(1),
    cluster_ids: z.array(idSchema),
    policy: z.enum(['spread', 'pack']),
  }) satisfies z.ZodType<ZoneSpec, unknown>,
  image: z.object({
    name: z.string().min(1),
    os: z.string(),
    min_disk_gb: z.number(),
    min_ram_mb: z.number(),
    visibility: z.enum(['public', 'private']),
    provider_refs: z.record(z.string(), z.string()),
  }) satisfies z.ZodType<ImageSpec, unknown>,
  flavor: z.object({
    name: z.string().min(1),
    vcpus: z.number(),
    ram_mb: z.number(),
    disk_gb: z.number(),
    extras: anything,
  }) satisfies z.ZodType<FlavorSpec, unknown>,
};

const pascal = (kind: OpsKind) => `${kind[0].toUpperCase()}${kind.slice(1)}`;

/** Registered and Updated carry the whole spec; Deleted only the id. */
function schemasOf(kind: OpsKind): Array<[string, EventSchema]> {
  const withSpec = schemaFor<OpsResourceRegistered>()(z.object({ id: idSchema, spec: SPEC_SCHEMAS[kind] }));
  const deleted = schemaFor<OpsResourceDeleted>()(z.object({ id: idSchema }));
  return [
    [`${pascal(kind)}Registered`, withSpec],
    [`${pascal(kind)}Updated`, withSpec],
    [`${pascal(kind)}Deleted`, deleted],
  ];
}

/** The runtime schema of every ops resource event at its current version (see OPS_EVENT_VERSIONS). */
export const OPS_EVENT_SCHEMAS: Record<string, EventSchema> = Object.fromEntries(OPS_KINDS.flatMap(schemasOf));
