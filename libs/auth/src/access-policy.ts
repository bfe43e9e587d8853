import { SetMetadata } from '@nestjs/common';
import { TenantRole } from './principal';

/**
 * Every route declares who may call it; a route without a declaration is refused to everybody, so a
 * new endpoint cannot be left open by omission.
 */
export type AccessPolicy =
  | { kind: 'public' }
  /** A role in the project named by the route's `project_id` parameter. */
  | { kind: 'project'; role: TenantRole }
  /** Any tenant binding at all (catalog reads shared by every project). */
  | { kind: 'any_project' };

export const ACCESS_POLICY = 'hcp:access-policy';

export const Public = () => SetMetadata(ACCESS_POLICY, { kind: 'public' } satisfies AccessPolicy);
export const ProjectRole = (role: TenantRole) => SetMetadata(ACCESS_POLICY, { kind: 'project', role } satisfies AccessPolicy);
export const AnyProjectMember = () => SetMetadata(ACCESS_POLICY, { kind: 'any_project' } satisfies AccessPolicy);
