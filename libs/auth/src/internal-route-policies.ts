/**
 * Who may call the internal router (`/internal/v1/...`, host agents only): a table apart from
 * ROUTE_POLICIES, because no tenant or ops token is accepted on these routes and no host credential on
 * the public ones. Keys are `METHOD path` as the router declares the route, like ROUTE_POLICIES.
 */
export type InternalRoutePolicy =
  /** The body's one-time bootstrap token is the credential (checked by the handler); limited per address. */
  | { auth: 'bootstrap_token' }
  /** `Authorization: Bearer <host credential>`; limited per host. */
  | { auth: 'host' };

const host: InternalRoutePolicy = { auth: 'host' };

export const INTERNAL_ROUTE_POLICIES: Readonly<Record<string, InternalRoutePolicy>> = {
  'POST /internal/v1/enroll': { auth: 'bootstrap_token' },
  'POST /internal/v1/heartbeat': host,
  'POST /internal/v1/calls/claim': host,
  'POST /internal/v1/calls/:id/renew': host,
  'POST /internal/v1/calls/:id/outcome': host,
};

/** Every internal route starts here, and no public route does. */
export const INTERNAL_PATH_PREFIX = '/internal/';
