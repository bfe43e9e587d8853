/** Injection token of the EventStore port (PostgreSQL or EventStoreDB adapter, chosen at start). */
export const EVENT_STORE = Symbol('EVENT_STORE');
/** Injection token of the resolved HcpConfig. */
export const HCP_CONFIG = Symbol('HCP_CONFIG');
/** Injection token of the HcpRuntime (database, event store, keys, drivers opened at start). */
export const HCP_RUNTIME = Symbol('HCP_RUNTIME');
