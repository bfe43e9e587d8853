import { OrphanState } from '@hcp/domain';
import { presentOrphan } from './orphan.presenter';

const orphan = (over: Partial<OrphanState> = {}): OrphanState => ({
  id: 'o-1',
  provider_id: 'prov',
  cluster_id: 'cl',
  hcp_id: 'vm-1',
  project_id: 'acme',
  provider_ref: { provider_id: 'prov', cluster_id: 'cl', node: 'pve1', vmid: 4242 },
  power_state: 'stopped',
  hcp_record: 'failed_create',
  status: 'open',
  found_at: '2026-01-01T00:00:00.000Z',
  job_id: null,
  last_error: null,
  created_at: '2026-01-01T00:00:00.000Z',
  updated_at: '2026-01-01T00:00:00.000Z',
  ...over,
});

describe('an orphan as ops see it', () => {
  it('never shows where the resource sits at the provider', () => {
    const view = JSON.stringify(presentOrphan(orphan()));
    expect(view).not.toMatch(/vmid|4242|pve1|node|provider_ref/);
  });

  it('offers adopt and destroy for a failed create, destroy alone when HCP has no VM to give it to', () => {
    expect(presentOrphan(orphan()).actions).toEqual(['adopt', 'destroy']);
    expect(presentOrphan(orphan({ hcp_record: 'absent', project_id: null })).actions).toEqual(['destroy']);
    expect(presentOrphan(orphan({ hcp_record: 'deleted' })).actions).toEqual(['destroy']);
  });

  it('offers the same again after a destroy failed, and nothing while a job owns it or once it is resolved', () => {
    expect(presentOrphan(orphan({ status: 'destroy_failed' })).actions).toEqual(['adopt', 'destroy']);
    for (const status of ['destroying', 'destroyed', 'adopted', 'cleared'] as const)
      expect(presentOrphan(orphan({ status })).actions).toEqual([]);
  });

  it('shows the last destroy failure as its error', () => {
    const error = { code: 'PROVIDER_TIMEOUT' as const, message: 'slow', retryable: true };
    expect(presentOrphan(orphan({ status: 'destroy_failed', job_id: 'j-1', last_error: error }))).toMatchObject({
      job_id: 'j-1',
      error,
    });
  });
});
