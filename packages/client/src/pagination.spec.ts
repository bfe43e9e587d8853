import { envelope, ScriptedServer } from '../test/scripted-server.fixture';
import { createHcpClient, HcpApiError, type ListItem, listAll, paginate, type Vm } from './index';

// Compile-time: a list path's items have the resource's type.
const vmItem: ListItem<'/v1/projects/{project_id}/vms'> extends Vm ? true : false = true;

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const all: T[] = [];
  for await (const item of items) all.push(item);
  return all;
}

describe('paginate', () => {
  it('yields every item of every page, giving each page the previous next_cursor', async () => {
    const pages: Record<string, { items: number[]; next_cursor: string | null }> = {
      start: { items: [1, 2], next_cursor: 'c2' },
      c2: { items: [3, 4], next_cursor: 'c3' },
      c3: { items: [5], next_cursor: null },
    };
    const asked: (string | undefined)[] = [];
    const items = await collect(
      paginate(async (cursor) => {
        asked.push(cursor);
        return pages[cursor ?? 'start'];
      }),
    );
    expect(vmItem).toBe(true);
    expect(items).toEqual([1, 2, 3, 4, 5]);
    expect(asked).toEqual([undefined, 'c2', 'c3']);
  });

  it('reads no page beyond what the loop consumes', async () => {
    let fetched = 0;
    const endless = paginate(async (cursor) => {
      fetched++;
      return { items: ['a', 'b'], next_cursor: `${Number(cursor ?? 0) + 1}` };
    });
    const firstThree: string[] = [];
    for await (const item of endless) {
      firstThree.push(item);
      if (firstThree.length === 3) break;
    }
    expect(firstThree).toEqual(['a', 'b', 'a']);
    expect(fetched).toBe(2);
  });

  it('stops at a page without next_cursor, and on an empty last page', async () => {
    expect(await collect(paginate(async () => ({ items: ['only'] })))).toEqual(['only']);
    expect(
      await collect(paginate(async (c) => (c ? { items: [], next_cursor: null } : { items: ['x'], next_cursor: 'n' }))),
    ).toEqual(['x']);
  });

  it('fails instead of looping for ever when a page hands back the cursor it was given', async () => {
    const stuck = paginate(async (cursor) => ({ items: [cursor ?? 'first'], next_cursor: 'same' }));
    await expect(collect(stuck)).rejects.toMatchObject({ code: 'UNEXPECTED_RESPONSE' });
  });
});

describe('listAll', () => {
  let server: ScriptedServer;
  afterEach(() => server?.close());

  it('walks a list route page by page, keeping the filters and page size on every page', async () => {
    server = await ScriptedServer.start((req) => {
      const cursor = new URL(req.url, 'http://x').searchParams.get('cursor');
      return cursor === null
        ? { status: 200, body: { items: [{ id: 'vm-1' }, { id: 'vm-2' }], next_cursor: 'page-2' } }
        : { status: 200, body: { items: [{ id: 'vm-3' }], next_cursor: null } };
    });
    const client = createHcpClient({ baseUrl: server.baseUrl, token: 't' });
    const vms = await collect(
      listAll(client, '/v1/projects/{project_id}/vms', {
        path: { project_id: 'p1' },
        query: { status: 'running', tag: ['env:dev'], limit: 2 },
      }),
    );
    expect(vms.map((vm) => vm.id)).toEqual(['vm-1', 'vm-2', 'vm-3']);
    expect(server.requests.map((r) => r.url)).toEqual([
      '/v1/projects/p1/vms?status=running&tag=env%3Adev&limit=2',
      '/v1/projects/p1/vms?status=running&tag=env%3Adev&limit=2&cursor=page-2',
    ]);
  });

  it("throws a page's error answer as its HcpApiError", async () => {
    server = await ScriptedServer.start((_req, i) =>
      i === 0
        ? { status: 200, body: { items: [{ id: 'z1' }], next_cursor: 'c' } }
        : { status: 400, body: envelope('INVALID_REQUEST', 'bad cursor') },
    );
    const client = createHcpClient({ baseUrl: server.baseUrl });
    const seen: string[] = [];
    const err = await (async () => {
      for await (const zone of listAll(client, '/v1/zones', {})) seen.push(zone.id);
    })().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HcpApiError);
    expect(err).toMatchObject({ status: 400, code: 'INVALID_REQUEST', message: 'bad cursor' });
    expect(seen).toEqual(['z1']);
  });
});
