import type { HcpClient } from './client';
import { unwrap } from './client';
import { HcpApiError } from './errors';
import type { paths } from './schema';

/** One page of a list (docs/API.md: `{ items, next_cursor }`, next_cursor null on the last page). */
export interface Page<T> {
  items: T[];
  next_cursor?: string | null;
}

/**
 * Every item of a cursor-paged list, page after page as the iteration asks for them: fetchPage gets
 * undefined first, then each page's next_cursor, until a page has none.
 */
export async function* paginate<T>(fetchPage: (cursor?: string) => Promise<Page<T>>): AsyncIterable<T> {
  let cursor: string | undefined;
  for (;;) {
    const page = await fetchPage(cursor);
    yield* page.items;
    if (!page.next_cursor) return;
    // A server that hands back the cursor it was given would keep this loop going for ever.
    if (page.next_cursor === cursor)
      throw new HcpApiError({
        status: 0,
        code: 'UNEXPECTED_RESPONSE',
        message: `the list answered cursor ${cursor} again`,
      });
    cursor = page.next_cursor;
  }
}

type JsonOk<Op> = Op extends { responses: { 200: { content: { 'application/json': infer Body } } } } ? Body : never;
type GetOf<P extends keyof paths> = paths[P] extends { get: infer Op } ? Op : never;

/** The paths whose GET answers a page: `{ items, next_cursor }`. */
export type ListPath = {
  [P in keyof paths]: JsonOk<GetOf<P>> extends { items: unknown[]; next_cursor: string | null } ? P : never;
}[keyof paths];

/** The item type of a list path: ListItem<'/v1/projects/{project_id}/vms'> is Vm. */
export type ListItem<P extends ListPath> = JsonOk<GetOf<P>> extends { items: (infer Item)[] } ? Item : never;

type ParamsOf<P extends ListPath> = GetOf<P> extends { parameters: infer Params } ? Params : never;
type QueryOf<P extends ListPath> = NonNullable<ParamsOf<P> extends { query?: infer Q } ? Q : never>;

/** The parameters of a list call, without the cursor (listAll turns the pages). `limit` sets the page size. */
export type ListParams<P extends ListPath> = Omit<ParamsOf<P>, 'query' | 'header' | 'cookie'> & {
  query?: Omit<QueryOf<P>, 'cursor'>;
};

/**
 * Every item of a list route, typed by its path:
 * `for await (const vm of listAll(client, '/v1/projects/{project_id}/vms', { path: { project_id } }))`.
 * Each page's error answer throws its HcpApiError.
 */
export function listAll<P extends ListPath>(
  client: HcpClient,
  path: P,
  params: ListParams<P>,
): AsyncIterable<ListItem<P>> {
  // openapi-fetch's GET is typed per path; for a path only known as "some list path" its init cannot be
  // checked by the compiler, which ListParams<P> has already done for the caller.
  const get = client.GET as unknown as (
    path: string,
    init: { params: Record<string, unknown> },
  ) => Promise<{ data?: Page<ListItem<P>>; error?: unknown; response: Response }>;
  const base = params as { query?: Record<string, unknown> } & Record<string, unknown>;
  return paginate((cursor) =>
    get(path, { params: { ...base, query: { ...base.query, ...(cursor === undefined ? {} : { cursor }) } } }).then(
      unwrap,
    ),
  );
}
