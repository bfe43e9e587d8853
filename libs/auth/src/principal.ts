export const TENANT_ROLES = ['viewer', 'operator', 'admin', 'owner'] as const;
export type TenantRole = (typeof TENANT_ROLES)[number];
export const OPS_ROLES = ['cloud-operator', 'infra-admin', 'security-auditor', 'break-glass'] as const;
export type OpsRole = (typeof OPS_ROLES)[number];

/** The verified caller: who (`sub`) and what they are bound to. Built only from a verified token. */
export interface Principal {
  sub: string;
  projects: Record<string, TenantRole>;
  opsRoles: OpsRole[];
}

/** Turns verified claims into a Principal, or null when they do not have HCP's shape. */
export function principalFromClaims(claims: Record<string, unknown>): Principal | null {
  const { sub, hcp_projects: projects = {}, hcp_ops_roles: ops = [] } = claims;
  if (typeof sub !== 'string' || sub.length === 0 || sub.length > 255) return null;
  if (typeof projects !== 'object' || projects === null || Array.isArray(projects)) return null;
  const bound: Record<string, TenantRole> = {};
  for (const [project, role] of Object.entries(projects as Record<string, unknown>)) {
    if (!(TENANT_ROLES as readonly unknown[]).includes(role)) return null;
    bound[project] = role as TenantRole;
  }
  if (!Array.isArray(ops) || !ops.every((r) => (OPS_ROLES as readonly unknown[]).includes(r))) return null;
  return { sub, projects: bound, opsRoles: ops as OpsRole[] };
}
