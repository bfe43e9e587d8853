import { HcpError } from '@hcp/domain';
import { AccessRequest, decideAccess } from './access-decision';
import { Principal, principalFromClaims } from './principal';
import { RoutePolicy } from './route-policies';

const alice: Principal = { sub: 'alice', projects: { web: 'operator', ops: 'owner' }, opsRoles: [] };
const operatorOnly: Principal = { sub: 'olga', projects: {}, opsRoles: ['cloud-operator'] };
const breakGlass: Principal = { sub: 'bea', projects: {}, opsRoles: ['break-glass'] };

function outcome(policy: RoutePolicy | undefined, who: Principal | null, req: AccessRequest = {}): string {
  try {
    return decideAccess(policy, who, req).via;
  } catch (err) {
    return (err as HcpError).code;
  }
}

const project = (role: 'viewer' | 'operator' | 'admin' | 'owner'): RoutePolicy => ({ scope: 'project', role });

describe('access decision', () => {
  it('lets a tenant role do what the roles below it may do, and no more', () => {
    expect(outcome(project('viewer'), alice, { projectId: 'web' })).toBe('binding');
    expect(outcome(project('operator'), alice, { projectId: 'web' })).toBe('binding');
    expect(outcome(project('admin'), alice, { projectId: 'web' })).toBe('FORBIDDEN');
    expect(outcome(project('admin'), alice, { projectId: 'ops' })).toBe('binding');
  });

  it('answers NOT_FOUND to a tenant for a project without a binding, inherited keys included', () => {
    for (const projectId of ['other', 'constructor', '__proto__', 'toString']) {
      expect(outcome(project('viewer'), alice, { projectId })).toBe('NOT_FOUND');
    }
  });

  it('refuses ops roles on tenant paths unless they break glass with a reason', () => {
    expect(outcome(project('viewer'), operatorOnly, { projectId: 'web' })).toBe('FORBIDDEN');
    expect(outcome(project('viewer'), breakGlass, { projectId: 'web' })).toBe('FORBIDDEN');
    expect(outcome(project('owner'), breakGlass, { projectId: 'web', breakGlassReason: 'INC-42 restore' })).toBe(
      'break_glass',
    );
    expect(outcome(project('owner'), breakGlass, { projectId: 'web', breakGlassReason: '   ' })).toBe('FORBIDDEN');
    expect(outcome(project('owner'), breakGlass, { projectId: 'web', breakGlassReason: 'x'.repeat(501) })).toBe(
      'INVALID_REQUEST',
    );
  });

  it('keeps tenants out of the ops scope', () => {
    const ops: RoutePolicy = { scope: 'ops', roles: ['cloud-operator'] };
    expect(outcome(ops, alice)).toBe('FORBIDDEN');
    expect(outcome(ops, operatorOnly)).toBe('ops_role');
    expect(outcome(ops, { ...operatorOnly, opsRoles: ['security-auditor'] })).toBe('FORBIDDEN');
    expect(outcome(ops, breakGlass, { breakGlassReason: 'INC-7' })).toBe('break_glass');
  });

  it('opens the shared catalog to any tenant binding only', () => {
    expect(outcome({ scope: 'any_project' }, alice)).toBe('binding');
    expect(outcome({ scope: 'any_project' }, operatorOnly)).toBe('FORBIDDEN');
  });

  it('refuses a route without a policy and an anonymous caller', () => {
    expect(outcome(undefined, alice)).toBe('FORBIDDEN');
    expect(outcome(project('viewer'), null, { projectId: 'web' })).toBe('UNAUTHORIZED');
    expect(outcome({ scope: 'public' }, null)).toBe('public');
  });
});

describe('principal from claims', () => {
  it('reads sub, project bindings and ops roles', () => {
    expect(
      principalFromClaims({ sub: 'bob', hcp_projects: { p: 'viewer' }, hcp_ops_roles: ['cloud-operator'] }),
    ).toEqual({
      sub: 'bob',
      projects: { p: 'viewer' },
      opsRoles: ['cloud-operator'],
    });
    expect(principalFromClaims({ sub: 'bob' })).toEqual({ sub: 'bob', projects: {}, opsRoles: [] });
  });

  it("rejects claims that do not have HCP's shape", () => {
    expect(principalFromClaims({})).toBeNull();
    expect(principalFromClaims({ sub: '' })).toBeNull();
    expect(principalFromClaims({ sub: 'x', hcp_projects: { p: 'god' } })).toBeNull();
    expect(principalFromClaims({ sub: 'x', hcp_projects: ['p'] })).toBeNull();
    expect(principalFromClaims({ sub: 'x', hcp_ops_roles: ['root'] })).toBeNull();
    expect(principalFromClaims({ sub: 'x', hcp_ops_roles: 'cloud-operator' })).toBeNull();
  });
});
