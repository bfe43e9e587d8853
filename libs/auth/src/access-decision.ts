import { HcpError } from '@hcp/domain';
import { Principal, TENANT_ROLES, TenantRole } from './principal';
import { RoutePolicy } from './route-policies';

/** How a request was let through; break-glass uses are recorded by the caller. */
export type AccessGrant =
  | { via: 'public' }
  | { via: 'binding'; role?: TenantRole }
  | { via: 'ops_role' }
  | { via: 'break_glass'; reason: string };

export interface AccessRequest {
  /** The route's `project_id`, when it has one. */
  projectId?: string;
  /** The `X-Break-Glass-Reason` header. */
  breakGlassReason?: string;
}

const RANK: Record<TenantRole, number> = { viewer: 0, operator: 1, admin: 2, owner: 3 };
const MAX_REASON = 500;

/**
 * The authorization decision, pure: policy x principal x request -> grant, or a taxonomy error.
 * - tenant routes: the project binding's role decides; no binding is NOT_FOUND (no id probing), unless
 *   the caller is an ops principal, who gets FORBIDDEN (ops reach tenant paths only as break-glass);
 * - ops routes: one of the listed ops roles; tenants get FORBIDDEN;
 * - break-glass: any route of either scope, but only with a reason, and every use is recorded.
 */
export function decideAccess(
  policy: RoutePolicy | undefined,
  principal: Principal | null,
  request: AccessRequest,
): AccessGrant {
  if (!policy) throw new HcpError('FORBIDDEN', 'this route has no access policy');
  if (policy.scope === 'public') return { via: 'public' };
  if (!principal) throw new HcpError('UNAUTHORIZED', 'a valid bearer token is required');

  if (policy.scope === 'ops') {
    if (policy.roles.some((r) => principal.opsRoles.includes(r))) return { via: 'ops_role' };
    return breakGlassOr(
      principal,
      request,
      () => new HcpError('FORBIDDEN', `this action needs one of the ops roles ${policy.roles.join(', ')}`),
    );
  }

  if (policy.scope === 'any_project') {
    if (Object.keys(principal.projects).length > 0) return { via: 'binding' };
    return breakGlassOr(principal, request, () => new HcpError('FORBIDDEN', 'a tenant project binding is required'));
  }

  const projectId = request.projectId ?? '';
  const role = Object.hasOwn(principal.projects, projectId) ? principal.projects[projectId] : undefined;
  if (role && (TENANT_ROLES as readonly string[]).includes(role)) {
    if (RANK[role] >= RANK[policy.role]) return { via: 'binding', role };
    throw new HcpError('FORBIDDEN', `this action needs the ${policy.role} role in the project`, {
      required_role: policy.role,
    });
  }
  return breakGlassOr(principal, request, () =>
    principal.opsRoles.length > 0
      ? new HcpError('FORBIDDEN', 'ops roles reach tenant projects only as break-glass')
      : new HcpError('NOT_FOUND', 'project not found'),
  );
}

function breakGlassOr(principal: Principal, request: AccessRequest, refusal: () => HcpError): AccessGrant {
  if (!principal.opsRoles.includes('break-glass')) throw refusal();
  const reason = request.breakGlassReason?.trim();
  if (!reason) throw new HcpError('FORBIDDEN', 'break-glass access needs an X-Break-Glass-Reason header');
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are exactly what a header value must not carry
  if (reason.length > MAX_REASON || /[\u0000-\u001f\u007f]/.test(reason)) {
    throw new HcpError(
      'INVALID_REQUEST',
      `X-Break-Glass-Reason must be printable text of at most ${MAX_REASON} characters`,
    );
  }
  return { via: 'break_glass', reason };
}
