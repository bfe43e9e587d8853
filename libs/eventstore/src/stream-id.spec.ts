import { assertStreamId, InvalidStreamIdError } from './stream-id';

describe('stream ids', () => {
  it.each([
    'vm-9f0c2a4e-2d6b-4c1e-9a63-0f8e4b7d1c55',
    'job-9f0c2a4e-2d6b-4c1e-9a63-0f8e4b7d1c55',
    'quota-team-a',
    'quota-a--b',
    'request-9f0c2a4e',
    'cabc123t4-vm',
    'quota-team-null',
    'quota-null-x',
    'console-x-undefined',
  ])('accepts %s', (id) => {
    expect(() => assertStreamId(id)).not.toThrow();
  });

  it.each(['vm-undefined', 'job-null', 'job-', '', '   ', 'undefined', 'vm-NaN', 'vm-[object Object]'])(
    'refuses %j as built from a missing value',
    (id) => {
      let caught: unknown;
      try {
        assertStreamId(id);
      } catch (err) {
        caught = err;
      }
      expect(caught).toBeInstanceOf(InvalidStreamIdError);
      expect(caught).toMatchObject({ code: 'INTERNAL_ERROR', retryable: false });
    },
  );

  it('refuses a stream id that is not a string at all', () => {
    expect(() => assertStreamId(undefined)).toThrow(InvalidStreamIdError);
  });
});
