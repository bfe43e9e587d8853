import { virshFailure } from './libvirt-errors';

// The texts are what virsh 9.0 printed on this project's CI machine.
describe('virshFailure', () => {
  it.each([
    ["error: failed to get domain 'hcp-vm-1'", 'NOT_FOUND', false],
    [
      "error: failed to get vol 'x'\nerror: Storage volume not found: no storage vol with matching path 'x'",
      'NOT_FOUND',
      false,
    ],
    [
      "error: failed to connect to the hypervisor\nerror: Failed to connect socket to '/nonexistent': No such file or directory",
      'PROVIDER_UNAVAILABLE',
      true,
    ],
    [
      "error: failed to get pool 'p'\nerror: Storage pool not found: no storage pool with matching name 'p'",
      'PROVIDER_UNAVAILABLE',
      true,
    ],
    [
      'error: Failed to destroy domain hcp-vm-1\nerror: Requested operation is not valid: domain is not running',
      'CONFLICT',
      false,
    ],
    ['error: Failed to define domain from x.xml\nerror: XML error: invalid memory value', 'INVALID_REQUEST', false],
    ['error: internal error: something nobody foresaw', 'PROVIDER_UNAVAILABLE', true],
  ])('classifies %j', (stderr, code, retryable) => {
    const err = virshFailure('op', stderr);
    expect(err.code).toBe(code);
    expect(err.retryable).toBe(retryable);
    // The tenant-facing message names nothing of the host; virsh's text is kept for ops.
    expect(err.message).not.toMatch(/hcp-vm-1|nonexistent|'p'|'x'/);
    expect(err.details).toEqual({ provider: { operation: 'op', message: stderr } });
  });
});
