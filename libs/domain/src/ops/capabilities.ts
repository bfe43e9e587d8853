/**
 * The typed capability model. A driver declares what its provider can do; a cluster may narrow it
 * (never widen); a zone publishes what its clusters offer. Asking for what the target lacks is
 * FEATURE_NOT_SUPPORTED with the missing capability named.
 */
export const CONSOLE_TYPES = ['vnc', 'spice', 'webconsole', 'rdp'] as const;
export type ConsoleType = (typeof CONSOLE_TYPES)[number];

export interface Capabilities {
  console_types: ConsoleType[];
  reboot: boolean;
  graceful_stop: boolean;
  snapshots: boolean;
  resize: boolean;
  guest_agent_addresses: boolean;
  provider_tags: boolean;
}

export type BooleanCapability = Exclude<keyof Capabilities, 'console_types'>;
const BOOLEAN_CAPABILITIES: BooleanCapability[] = [
  'reboot',
  'graceful_stop',
  'snapshots',
  'resize',
  'guest_agent_addresses',
  'provider_tags',
];

export const NO_CAPABILITIES: Capabilities = {
  console_types: [],
  reboot: false,
  graceful_stop: false,
  snapshots: false,
  resize: false,
  guest_agent_addresses: false,
  provider_tags: false,
};

/** A cluster's narrowing applied to its driver's capabilities: `false` switches off, a list restricts. */
export function narrowCapabilities(driver: Capabilities, narrowing: Record<string, unknown>): Capabilities {
  const result: Capabilities = { ...driver, console_types: [...driver.console_types] };
  for (const name of BOOLEAN_CAPABILITIES) if (narrowing[name] === false) result[name] = false;
  const consoles = narrowing.console_types;
  if (Array.isArray(consoles)) result.console_types = driver.console_types.filter((t) => consoles.includes(t));
  return result;
}

/** What a zone offers: anything at least one of its clusters offers (placement then picks one that does). */
export function unionCapabilities(all: Capabilities[]): Capabilities {
  return all.reduce<Capabilities>(
    (acc, c) => ({
      console_types: [...new Set([...acc.console_types, ...c.console_types])],
      reboot: acc.reboot || c.reboot,
      graceful_stop: acc.graceful_stop || c.graceful_stop,
      snapshots: acc.snapshots || c.snapshots,
      resize: acc.resize || c.resize,
      guest_agent_addresses: acc.guest_agent_addresses || c.guest_agent_addresses,
      provider_tags: acc.provider_tags || c.provider_tags,
    }),
    { ...NO_CAPABILITIES, console_types: [] },
  );
}

/** Names of required capabilities `offered` lacks (`console:<type>` for a console type). */
export function missingCapabilities(
  offered: Capabilities,
  required: { flags?: BooleanCapability[]; console?: ConsoleType },
): string[] {
  const missing: string[] = (required.flags ?? []).filter((f) => !offered[f]);
  if (required.console && !offered.console_types.includes(required.console))
    missing.push(`console:${required.console}`);
  return missing;
}

/** What an action on an existing VM needs from its cluster (a forced stop needs nothing special). */
export function capabilitiesForAction(action: { type: string; force?: boolean }): BooleanCapability[] {
  if (action.type === 'reboot') return ['reboot'];
  if (action.type === 'stop' && !action.force) return ['graceful_stop'];
  return [];
}
