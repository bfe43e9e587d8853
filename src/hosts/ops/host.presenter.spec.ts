import type { HostRecord } from '../host.store';
import { presentHost } from './host.presenter';

const NOW = new Date('2026-12-03T12:00:00.000Z');
const host = (over: Partial<HostRecord> = {}): HostRecord => ({
  id: 'h-1',
  cluster_id: 'c-1',
  identity: 'kvm-1',
  hostname: 'kvm-1.lab',
  state: 'active',
  enrolled_with: 'e-1',
  enrolled_at: new Date('2026-12-01T00:00:00.000Z'),
  credential_rotated_at: null,
  last_heartbeat_at: new Date(NOW.getTime() - 10_000),
  capacity: { vcpus: 4, ram_mb: 8192, free_ram_mb: 1024 },
  capabilities: {},
  driver: 'libvirt',
  agent_version: '0.1.0',
  guests: 1,
  ...over,
});

describe('a host as ops see it', () => {
  it('is online while its last heartbeat is younger than the timeout', () => {
    expect(presentHost(host(), 30_000, NOW).online).toBe(true);
    expect(presentHost(host(), 10_000, NOW).online).toBe(false);
    expect(presentHost(host({ last_heartbeat_at: null }), 30_000, NOW)).toMatchObject({
      online: false,
      last_heartbeat_at: null,
    });
  });

  it('is never online once revoked', () => {
    expect(presentHost(host({ state: 'revoked' }), 30_000, NOW).online).toBe(false);
  });

  it('says whether its credential is configured or issued by HCP, and shows no credential', () => {
    expect(presentHost(host({ enrolled_with: 'static' }), 30_000, NOW).credential_source).toBe('static');
    const view = presentHost(host(), 30_000, NOW);
    expect(view.credential_source).toBe('enrolled');
    expect(Object.keys(view)).not.toContain('credential_digest');
    expect(Object.keys(view)).not.toContain('enrolled_with');
  });
});
