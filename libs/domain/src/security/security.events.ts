import { DomainEvent } from '../events/domain-event';

/** An ops principal used break-glass to act outside its scope; every use is one of these facts. */
export type BreakGlassUsed = DomainEvent<
  'BreakGlassUsed',
  { actor: string; reason: string; method: string; path: string; project_id: string | null; ops_roles: string[] }
>;

export type SecurityEvent = BreakGlassUsed;

export const SECURITY_EVENT_VERSIONS: Record<SecurityEvent['type'], number> = {
  BreakGlassUsed: 1,
};

export const BREAK_GLASS_STREAM_PREFIX = 'breakglass-';
