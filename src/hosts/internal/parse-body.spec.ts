import { enrollRequestSchema, heartbeatSchema } from '@hcp/host-protocol';
import { HcpError } from '@hcp/domain';
import { parseBody } from './parse-body';

describe('an agent body read through the host protocol', () => {
  it('gives back the parsed body', () => {
    expect(parseBody(enrollRequestSchema, { token: 't', identity: 'i', hostname: 'h' })).toEqual({
      token: 't',
      identity: 'i',
      hostname: 'h',
    });
  });

  it('answers INVALID_REQUEST naming the field at fault, without echoing what was sent', () => {
    const sent = {
      capacity: { vcpus: -1, ram_mb: 1, free_ram_mb: 1 },
      driver: 'secret-looking-value',
      capabilities: {},
    };
    let error: unknown;
    try {
      parseBody(heartbeatSchema, sent);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(HcpError);
    expect(error).toMatchObject({ code: 'INVALID_REQUEST', details: { field: 'capacity.vcpus' } });
    expect((error as Error).message).not.toContain('secret-looking-value');
  });

  it('treats a missing body as an empty one', () => {
    expect(() => parseBody(heartbeatSchema, undefined)).toThrow(HcpError);
  });
});
