/**
 * Hosts provisioned by other tools (HCP_STATIC_HOST_CREDENTIALS): `<cluster_id>/<identity>=sha256:<hex>`,
 * comma-separated. Only digests are configured, never the credentials themselves.
 */
export interface StaticHostCredential {
  cluster_id: string;
  identity: string;
  digest: string;
}

const ENTRY = /^([^/\s=,]{1,200})\/([^=\s,]{1,255})=sha256:([0-9a-fA-F]{64})$/;

/** The entries, or the reason the setting is wrong (naming the entry, never more of it than its place). */
export function parseStaticHostCredentials(text: string): StaticHostCredential[] {
  const entries = text
    .split(',')
    .map((e) => e.trim())
    .filter(Boolean);
  const parsed: StaticHostCredential[] = [];
  entries.forEach((entry, i) => {
    const m = ENTRY.exec(entry);
    if (!m)
      throw new Error(
        `entry ${i + 1} is not <cluster_id>/<identity>=sha256:<64 hex digits of the credential's SHA-256>`,
      );
    parsed.push({ cluster_id: m[1]!, identity: m[2]!, digest: m[3]!.toLowerCase() });
  });
  const digests = new Set(parsed.map((p) => p.digest));
  if (digests.size !== parsed.length) throw new Error('two entries have the same credential digest');
  const hosts = new Set(parsed.map((p) => `${p.cluster_id}/${p.identity}`));
  if (hosts.size !== parsed.length) throw new Error('two entries name the same host');
  return parsed;
}
