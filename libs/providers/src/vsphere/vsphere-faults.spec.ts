import { faultError, isTransientFault } from './vsphere-faults';
import { tagKey, tagOptions, tagsOf } from './vsphere-tags';

const fault = (type: string) => faultError({ type, message: `${type} happened` }, 'CloneVM_Task');

describe('vim25 faults as taxonomy errors', () => {
  it('makes refusals that follow from configuration or credentials non-retryable PROVIDER_UNAVAILABLE', () => {
    for (const type of ['InvalidLogin', 'NoPermission', 'InvalidDatastore', 'FileAlreadyExists', 'NotSupported']) {
      const err = fault(type);
      expect([type, err.code, err.retryable]).toEqual([type, 'PROVIDER_UNAVAILABLE', false]);
    }
  });

  it('makes InvalidArgument a non-retryable INVALID_REQUEST and a missing object NOT_FOUND', () => {
    expect([fault('InvalidArgument').code, fault('InvalidArgument').retryable]).toEqual(['INVALID_REQUEST', false]);
    expect(fault('ManagedObjectNotFound').code).toBe('NOT_FOUND');
  });

  it('makes transient faults and unknown ones retryable, and only the transient ones retried in the call', () => {
    for (const type of ['TaskInProgress', 'ConcurrentAccess', 'InvalidState', 'HostCommunication', 'SomethingNew']) {
      const err = fault(type);
      expect([type, err.code, err.retryable]).toEqual([type, 'PROVIDER_UNAVAILABLE', true]);
    }
    expect(isTransientFault('TaskInProgress')).toBe(true);
    expect(isTransientFault('SomethingNew')).toBe(false);
  });

  it('keeps the provider words in details.provider and none in the message', () => {
    const err = fault('InvalidDatastore');
    expect(err.details).toEqual({
      provider: { fault: 'InvalidDatastore', message: 'InvalidDatastore happened', operation: 'CloneVM_Task' },
    });
    expect(err.message).not.toMatch(/InvalidDatastore|CloneVM/);
  });

  it('answers CONFLICT for a power state that does not allow the call', () => {
    expect(fault('InvalidPowerState').code).toBe('CONFLICT');
  });
});

describe('tags in extraConfig', () => {
  it('round-trips any key and value, the empty value too', () => {
    const tags = { env: 'prod', 'team name': 'Blue Ops', empty: '', 'ü.x/y': '"quoted"' };
    const extra = tagOptions({}, tags);
    expect(Object.keys(extra).every((k) => /^hcp\.tag\.[A-Za-z0-9_%-]+$/.test(k))).toBe(true);
    expect(tagsOf(extra)).toEqual(tags);
  });

  it('changes only what differs and clears removed keys with an empty value', () => {
    const current = { 'hcp.id': 'vm-1', ...tagOptions({}, { a: '1', b: '2' }) };
    expect(tagOptions(current, { a: '1', c: '3' })).toEqual({ [tagKey('c')]: '"3"', [tagKey('b')]: '' });
    expect(tagOptions(current, { a: '1', b: '2' })).toEqual({});
  });
});
