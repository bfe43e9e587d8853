import { HcpError } from '../errors';
import { NO_CAPABILITIES } from './capabilities';
import { place, PlacementCandidate } from './placement';

const caps = { ...NO_CAPABILITIES, reboot: true, console_types: ['vnc' as const] };
const small = { vcpus: 1, ram_mb: 1024, disk_gb: 10 };

function cluster(id: string, over: Partial<PlacementCandidate> = {}): PlacementCandidate {
  return {
    cluster_id: id,
    provider_id: `p-${id}`,
    enabled: true,
    capabilities: caps,
    capacity: { vcpus: 16, ram_mb: 16384, disk_gb: 500 },
    used: { vcpus: 0, ram_mb: 0, disk_gb: 0 },
    image_ref: `tmpl-${id}`,
    ...over,
  };
}

function errorOf(fn: () => unknown): HcpError {
  try {
    fn();
  } catch (err) {
    return err as HcpError;
  }
  throw new Error('expected an error');
}

describe('placement', () => {
  const busy = cluster('a', { used: { vcpus: 8, ram_mb: 8192, disk_gb: 100 } });
  const idle = cluster('b');

  it('spreads onto the cluster with the most free memory', () => {
    expect(place('spread', [busy, idle], { zone: 'z', resources: small })).toEqual({
      cluster_id: 'b',
      provider_id: 'p-b',
      image_ref: 'tmpl-b',
    });
  });

  it('packs onto the fullest cluster that still fits', () => {
    expect(place('pack', [busy, idle], { zone: 'z', resources: small }).cluster_id).toBe('a');
  });

  it('skips disabled clusters, clusters without the image and full clusters', () => {
    const full = cluster('c', { used: { vcpus: 16, ram_mb: 0, disk_gb: 0 } });
    expect(
      place('pack', [cluster('a', { enabled: false }), cluster('b', { image_ref: undefined }), full, cluster('d')], {
        zone: 'z',
        resources: small,
      }).cluster_id,
    ).toBe('d');
  });

  it('treats a cluster without capacity figures as unlimited', () => {
    expect(place('spread', [busy, cluster('x', { capacity: null })], { zone: 'z', resources: small }).cluster_id).toBe(
      'x',
    );
  });

  it('names the missing capability when no cluster offers it', () => {
    const err = errorOf(() =>
      place('spread', [busy, idle], {
        zone: 'z',
        resources: small,
        requires: { flags: ['snapshots'], console: 'spice' },
      }),
    );
    expect(err.code).toBe('FEATURE_NOT_SUPPORTED');
    expect(err.details).toEqual({ missing: ['snapshots', 'console:spice'], zone: 'z' });
  });

  it('fails at once with the reasons when no cluster can take the VM', () => {
    const err = errorOf(() =>
      place(
        'spread',
        [cluster('a', { enabled: false }), cluster('b', { capacity: { vcpus: 0, ram_mb: 0, disk_gb: 0 } })],
        { zone: 'z', resources: small },
      ),
    );
    expect(err.code).toBe('PROVIDER_UNAVAILABLE');
    expect(err.retryable).toBe(false);
    expect(err.details).toEqual({ zone: 'z', reasons: { disabled: 1, no_free_capacity: 1 } });
    expect(errorOf(() => place('pack', [], { zone: 'empty', resources: small })).code).toBe('PROVIDER_UNAVAILABLE');
  });
});
