import { HcpError, NO_CAPABILITIES } from '@hcp/domain';
import type { HostCallRequest } from '@hcp/host-protocol';
import type { CallContext } from '@hcp/providers';
import { HostDriverDouble, running } from '../../test/integration/host-agent/host-driver-double';
import { runHostCall } from './run-host-call';

const ctx = (): CallContext => ({ deadline: new Date(Date.now() + 60_000), signal: new AbortController().signal });
const spec = {
  hcp_id: 'vm-1',
  project_id: 'p-1',
  name: 'web',
  image_ref: 'debian-12.qcow2',
  vcpus: 1,
  ram_mb: 256,
  disk_gb: 1,
  ssh_keys: [],
  tags: {},
  power_on: true,
};

describe('runHostCall', () => {
  const cases: Array<[HostCallRequest, string, unknown[], unknown]> = [
    [{ op: 'create', spec }, 'createVm', [spec], running('vm-1')],
    [{ op: 'start', hcp_id: 'vm-1' }, 'startVm', ['vm-1'], running('vm-1')],
    [
      { op: 'stop', hcp_id: 'vm-1', force: true },
      'stopVm',
      ['vm-1', true],
      { ...running('vm-1'), power_state: 'stopped' },
    ],
    [{ op: 'reboot', hcp_id: 'vm-1', force: false }, 'rebootVm', ['vm-1', false], running('vm-1')],
    [{ op: 'delete', hcp_id: 'vm-1' }, 'deleteVm', ['vm-1'], null],
    [{ op: 'describe', hcp_id: 'vm-1' }, 'describeVm', ['vm-1'], running('vm-1')],
    [{ op: 'list' }, 'listVms', [], [running('vm-listed')]],
    [{ op: 'update_tags', hcp_id: 'vm-1', tags: { env: 'prod' } }, 'updateTags', ['vm-1', { env: 'prod' }], null],
    [
      { op: 'console', hcp_id: 'vm-1', type: 'vnc' },
      'consoleEndpoint',
      ['vm-1'],
      { host: '127.0.0.1', port: 5901, password: 'once' },
    ],
    [{ op: 'check' }, 'checkConnectivity', [], null],
  ];

  it.each(cases)('runs %j as one %s call and answers its value', async (request, method, args, value) => {
    const driver = new HostDriverDouble();
    const context = ctx();
    await expect(runHostCall(driver, request, context)).resolves.toEqual(value);
    expect(driver.calls.map((c) => [c.method, c.args])).toEqual([[method, args]]);
    expect(driver.calls[0].ctx).toBe(context);
  });

  it('answers the console endpoint with the address HCP reaches this host on, when one is given', async () => {
    const driver = new HostDriverDouble();
    await expect(
      runHostCall(driver, { op: 'console', hcp_id: 'vm-1', type: 'vnc' }, ctx(), { consoleHost: '10.0.0.7' }),
    ).resolves.toEqual({ host: '10.0.0.7', port: 5901, password: 'once' });
  });

  it('passes the driver’s taxonomy error through unchanged', async () => {
    const gone = new HcpError('NOT_FOUND', 'VM not found');
    const driver = new HostDriverDouble().answer('startVm', async () => {
      throw gone;
    });
    await expect(runHostCall(driver, { op: 'start', hcp_id: 'vm-1' }, ctx())).rejects.toBe(gone);
  });

  it('refuses list and update_tags as FEATURE_NOT_SUPPORTED on a driver without them', async () => {
    const driver = Object.assign(new HostDriverDouble(NO_CAPABILITIES), { listVms: undefined, updateTags: undefined });
    await expect(runHostCall(driver, { op: 'list' }, ctx())).rejects.toMatchObject({ code: 'FEATURE_NOT_SUPPORTED' });
    await expect(runHostCall(driver, { op: 'update_tags', hcp_id: 'vm-1', tags: {} }, ctx())).rejects.toMatchObject({
      code: 'FEATURE_NOT_SUPPORTED',
    });
  });
});
