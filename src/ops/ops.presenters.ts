import { OpsResourceState } from '@hcp/domain';
import { OpsResource } from './ops-catalog.queries';
import { ProviderHealth } from './drivers/provider-health';

type Resource<K extends 'provider' | 'cluster' | 'zone' | 'image' | 'flavor'> = OpsResource<K> | OpsResourceState<K>;

/** A provider as ops see it: settings and TLS, whether credentials are stored, health; never the credentials. */
export function presentProvider(p: Resource<'provider'>, health: ProviderHealth | undefined) {
  const { has_credentials, tls, ...spec } = p.spec;
  return {
    id: p.id,
    ...spec,
    tls: {
      ...(tls.ca_pem ? { ca_pem: tls.ca_pem } : {}),
      ...(tls.fingerprint_sha256 ? { fingerprint_sha256: tls.fingerprint_sha256 } : {}),
    },
    credentials_set: has_credentials,
    health: health ?? { status: 'unknown', message: null, checked_at: null },
    created_at: p.created_at,
    updated_at: p.updated_at,
  };
}

export function presentOpsResource<K extends 'cluster' | 'zone' | 'image' | 'flavor'>(r: Resource<K>) {
  return { id: r.id, ...r.spec, created_at: r.created_at, updated_at: r.updated_at };
}
