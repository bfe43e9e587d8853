import {
  boundedTarget,
  boundedValue,
  matchTemplate,
  PROJECT_ID_PATTERN,
  RECORDED_VALUE_MAX,
  recordedPath,
  recordedProjectId,
  routeFacts,
} from './request-facts';

describe('request facts (what of a request may be recorded)', () => {
  it('keeps short printable values as they are', () => {
    expect(boundedValue('vm-1')).toBe('vm-1');
  });

  it('cuts a long value to the bound, marking the cut', () => {
    const cut = boundedValue('x'.repeat(500));
    expect(cut).toHaveLength(RECORDED_VALUE_MAX);
    expect(cut.endsWith('…')).toBe(true);
  });

  it('replaces control characters so a value cannot forge log or record lines', () => {
    expect(boundedValue('a\nb\u0000c')).toBe('a?b?c');
  });

  it('does not cut a surrogate pair in half', () => {
    const cut = boundedValue(`${'x'.repeat(6)}😀😀`, 8);
    expect(cut).toBe('xxxxxx…');
  });

  it('records a valid project id as given', () => {
    expect(recordedProjectId('team-a.prod_1')).toEqual({ project_id: 'team-a.prod_1', rejected: null });
  });

  it('records an over-long project id as null, with its length and a bounded prefix', () => {
    const given = 'p'.repeat(201);
    const recorded = recordedProjectId(given);
    expect(recorded.project_id).toBeNull();
    expect(recorded.rejected).toEqual({ length: 201, prefix: `${'p'.repeat(31)}…` });
  });

  it('records a project id outside the pattern (spaces, slashes, leading dot) as null', () => {
    for (const bad of ['a b', 'a/b', '.hidden', '', '-x']) expect(recordedProjectId(bad).project_id).toBeNull();
  });

  it('records no project as null without a rejection', () => {
    expect(recordedProjectId(undefined)).toEqual({ project_id: null, rejected: null });
  });

  it('keeps only string identifiers, each bounded, and at most a handful', () => {
    const many = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`k${i}`, 'v']));
    expect(Object.keys(boundedTarget(many))).toHaveLength(8);
    expect(boundedTarget({ vm_id: 'y'.repeat(300), n: 3 as unknown as string })).toEqual({
      vm_id: `${'y'.repeat(RECORDED_VALUE_MAX - 1)}…`,
    });
  });

  it('drops the query string and fragment of a path', () => {
    expect(recordedPath('/v1/projects/p/vms?access_token=secret#x')).toBe('/v1/projects/p/vms');
  });

  it('describes a request by its route template and the identifiers it matched, never its query', () => {
    expect(
      routeFacts('DELETE', 'DELETE /v1/projects/:project_id/vms/:vm_id', '/v1/projects/p1/vms/v%201?access_token=t'),
    ).toEqual({
      action: 'DELETE /v1/projects/:project_id/vms/:vm_id',
      route: '/v1/projects/:project_id/vms/:vm_id',
      target: { project_id: 'p1', vm_id: 'v 1' },
    });
  });

  it('matches a path with a trailing slash as Express does', () => {
    expect(routeFacts('GET', 'GET /v1/projects/:project_id/vms', '/v1/projects/p/vms/').target).toEqual({
      project_id: 'p',
    });
  });

  it('describes a request that matched no route by its bounded path alone', () => {
    const facts = routeFacts('GET', `GET /nowhere/${'z'.repeat(400)}`, `/nowhere/${'z'.repeat(400)}?token=t`);
    expect(facts.route).toBeNull();
    expect(facts.target).toEqual({});
    expect(facts.action.length).toBeLessThanOrEqual(4 + 256);
    expect(facts.action).not.toContain('token');
  });

  it('does not match a template against a path of another shape', () => {
    expect(matchTemplate('/v1/projects/:project_id/vms', '/v1/projects/p/jobs')).toBeNull();
    expect(matchTemplate('/v1/projects/:project_id/vms', '/v1/projects//vms')).toBeNull();
  });

  it('uses the same project-id pattern as the API (kept in step by a spec beside the recorder)', () => {
    expect(PROJECT_ID_PATTERN.test('a'.repeat(63))).toBe(true);
    expect(PROJECT_ID_PATTERN.test('a'.repeat(64))).toBe(false);
  });
});
