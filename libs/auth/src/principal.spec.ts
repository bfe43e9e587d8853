import { HcpError } from '@hcp/domain';
import { authorizeProject, Principal, principalFromClaims } from './principal';

const alice: Principal = { sub: 'alice', projects: { web: 'operator', ops: 'owner' }, opsRoles: [] };

function codeOf(fn: () => void): string | null {
  try {
    fn();
    return null;
  } catch (err) {
    return (err as HcpError).code;
  }
}

describe('project authorization', () => {
  it('lets a role do what the roles below it may do', () => {
    expect(codeOf(() => authorizeProject(alice, 'web', 'viewer'))).toBeNull();
    expect(codeOf(() => authorizeProject(alice, 'web', 'operator'))).toBeNull();
    expect(codeOf(() => authorizeProject(alice, 'ops', 'admin'))).toBeNull();
  });

  it('refuses a role below the one required with FORBIDDEN', () => {
    expect(codeOf(() => authorizeProject(alice, 'web', 'admin'))).toBe('FORBIDDEN');
  });

  it('answers NOT_FOUND for a project without a binding, including inherited object keys', () => {
    expect(codeOf(() => authorizeProject(alice, 'other', 'viewer'))).toBe('NOT_FOUND');
    expect(codeOf(() => authorizeProject(alice, 'constructor', 'viewer'))).toBe('NOT_FOUND');
    expect(codeOf(() => authorizeProject(alice, '__proto__', 'viewer'))).toBe('NOT_FOUND');
  });
});

describe('principal from claims', () => {
  it('reads sub, project bindings and ops roles', () => {
    expect(principalFromClaims({ sub: 'bob', hcp_projects: { p: 'viewer' }, hcp_ops_roles: ['cloud-operator'] })).toEqual({
      sub: 'bob',
      projects: { p: 'viewer' },
      opsRoles: ['cloud-operator'],
    });
    expect(principalFromClaims({ sub: 'bob' })).toEqual({ sub: 'bob', projects: {}, opsRoles: [] });
  });

  it('rejects claims that do not have HCP\'s shape', () => {
    expect(principalFromClaims({})).toBeNull();
    expect(principalFromClaims({ sub: '' })).toBeNull();
    expect(principalFromClaims({ sub: 'x', hcp_projects: { p: 'god' } })).toBeNull();
    expect(principalFromClaims({ sub: 'x', hcp_projects: ['p'] })).toBeNull();
    expect(principalFromClaims({ sub: 'x', hcp_ops_roles: ['root'] })).toBeNull();
    expect(principalFromClaims({ sub: 'x', hcp_ops_roles: 'cloud-operator' })).toBeNull();
  });
});
