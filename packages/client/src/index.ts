// @hcp/client: a typed client of HCP's northbound API (docs/API.md), generated from its /openapi.json.
export { createHcpClient, unwrap } from './client';
export type { FetchResult, HcpClient, HcpClientOptions } from './client';
export { HcpApiError, HcpTimeoutError } from './errors';
export { newIdempotencyKey } from './idempotency';
export { waitForJob } from './jobs';
export type { WaitForJobOptions } from './jobs';
export { listAll, paginate } from './pagination';
export type { ListItem, ListParams, ListPath, Page } from './pagination';
export type { components, operations, paths } from './schema';
export * from './types';
