import { createHcpUpcasters } from '../hcp-events';
import { receivedData, refusedData } from './request.events';

const LONG_PROJECT = 'p'.repeat(201);

describe('request events as recorded', () => {
  it('record a refusal by route and matched identifiers, with an invalid project id as null', () => {
    const data = refusedData({
      actor: null,
      action: 'GET /v1/projects/:project_id/vms',
      method: 'GET',
      path: `/v1/projects/${LONG_PROJECT}/vms?access_token=secret`,
      project_id: LONG_PROJECT,
      code: 'UNAUTHORIZED',
      status: 401,
    });
    expect(data).toEqual({
      actor: null,
      action: 'GET /v1/projects/:project_id/vms',
      method: 'GET',
      route: '/v1/projects/:project_id/vms',
      target: {},
      project_id: null,
      rejected: { project_id: { length: 201, prefix: `${'p'.repeat(31)}…` } },
      code: 'UNAUTHORIZED',
      status: 401,
    });
  });

  it('record a valid refusal with its project id and identifiers', () => {
    const data = refusedData({
      actor: 'mallory',
      action: 'DELETE /v1/projects/:project_id/vms/:vm_id',
      method: 'DELETE',
      path: '/v1/projects/aud/vms/v1',
      project_id: 'aud',
      code: 'NOT_FOUND',
      status: 404,
    });
    expect(data).toMatchObject({ project_id: 'aud', target: { project_id: 'aud', vm_id: 'v1' }, rejected: {} });
  });

  it('record a received request with bounded identifiers and no invalid project id', () => {
    const data = receivedData({
      actor: 'bea',
      method: 'POST',
      route: '/v1/projects/:project_id/vms/:vm_id/actions/start',
      scope: 'tenant',
      params: { project_id: LONG_PROJECT, vm_id: 'v'.repeat(300) },
    });
    expect(data.project_id).toBeNull();
    expect(data.target.project_id).toBeUndefined();
    expect(data.target.vm_id.length).toBeLessThanOrEqual(128);
    expect(data.rejected.project_id?.length).toBe(201);
    expect(data.action).toBe('POST /v1/projects/:project_id/vms/:vm_id/actions/start');
  });

  it('upcast a stored v1 received request to v2 without its raw path', () => {
    const upcast = createHcpUpcasters().upcast({
      type: 'RequestReceived',
      version: 1,
      data: {
        actor: 'tom',
        action: 'POST /v1/projects/:project_id/vms',
        method: 'POST',
        path: '/v1/projects/aud/vms?x=1',
        scope: 'tenant',
        project_id: 'aud',
        target: { project_id: 'aud' },
      },
    });
    expect(upcast).toEqual({
      type: 'RequestReceived',
      version: 2,
      data: {
        actor: 'tom',
        action: 'POST /v1/projects/:project_id/vms',
        method: 'POST',
        route: '/v1/projects/:project_id/vms',
        scope: 'tenant',
        project_id: 'aud',
        target: { project_id: 'aud' },
        rejected: {},
      },
    });
  });
});
