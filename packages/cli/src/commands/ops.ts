import {
  type AuditRecord,
  type Cluster,
  type components,
  type Flavor,
  type HcpClient,
  type Host,
  type Image,
  listAll,
  type Projection,
  type Provider,
  unwrap,
  type Zone,
} from '@hcp/client';
import { Command } from 'commander';
import { requireProject } from '../config/connection';
import { parseDuration } from '../duration';
import { EXIT, OutcomeError, UsageError } from '../exit-codes';
import { Column, renderList, renderOne } from '../output/output';
import { CliRuntime } from '../runtime';

type Schemas = components['schemas'];

/**
 * The catalog (zones, images, flavors: tenants list them, ops change them), quotas, and the ops-only
 * resources: providers, clusters, hosts, the audit trail, projections and usage. Bodies of creates and
 * updates come from `-f <file>` (YAML or JSON, `-` for standard input) as docs/API.md gives them.
 */
export function opsCommands(program: Command, rt: CliRuntime): void {
  const session = (cmd: Command) => {
    const connection = rt.connection(cmd);
    return { connection, client: rt.client(connection), format: rt.format(cmd) };
  };
  const body = async (file: string | undefined): Promise<never> => {
    if (!file) throw new UsageError('-f <file> is needed: the request body as YAML or JSON ("-" for standard input)');
    return (await rt.readBody(file)) as never;
  };
  const list = async <T>(items: AsyncIterable<T>): Promise<T[]> => {
    const all: T[] = [];
    for await (const item of items) all.push(item);
    return all;
  };
  const done = (cmd: Command, what: string) => rt.out(renderOne({ deleted: what }, rt.format(cmd)));

  // Zones: tenants list them with their capabilities; ops map them to clusters.
  const zones = program.command('zones').description('zones (list: any tenant; create/update/delete: cloud-operator)');
  zones
    .command('list')
    .description('zones and their capabilities (--ops: with their clusters and policy)')
    .option('--ops', 'the ops view (cloud-operator)')
    .action(async (opts: { ops?: boolean }, cmd: Command) => {
      const { client, format } = session(cmd);
      if (opts.ops) {
        const items = await list(listAll(client, '/v1/ops/zones', {}));
        rt.out(
          renderList(items, format, [
            ['ID', (z) => z.id],
            ['NAME', (z) => z.name],
            ['POLICY', (z) => z.policy],
            ['CLUSTERS', (z) => z.cluster_ids.join(',')],
          ]),
        );
        return;
      }
      const items = await list(listAll(client, '/v1/zones', {}));
      rt.out(
        renderList<Zone>(items, format, [
          ['ID', (z) => z.id],
          ['NAME', (z) => z.name],
          ['POLICY', (z) => z.policy],
          ['CONSOLES', (z) => z.capabilities.console_types.join(',')],
          ['REBOOT', (z) => z.capabilities.reboot],
        ]),
      );
    });
  fileOption(zones.command('create').description('create a zone: {id, name, cluster_ids, policy}')).action(
    async (opts: { file?: string }, cmd: Command) => {
      const { client, format } = session(cmd);
      rt.out(renderOne(unwrap(await client.POST('/v1/ops/zones', { body: await body(opts.file) })), format));
    },
  );
  fileOption(zones.command('update <id>').description('replace a zone: {name, cluster_ids, policy}')).action(
    async (id: string, opts: { file?: string }, cmd: Command) => {
      const { client, format } = session(cmd);
      rt.out(
        renderOne(
          unwrap(await client.PUT('/v1/ops/zones/{id}', { params: { path: { id } }, body: await body(opts.file) })),
          format,
        ),
      );
    },
  );
  zones
    .command('delete <id>')
    .description('delete a zone')
    .action(async (id: string, _opts, cmd: Command) => {
      const { client } = session(cmd);
      unwrap(await client.DELETE('/v1/ops/zones/{id}', { params: { path: { id } } }));
      done(cmd, `zone ${id}`);
    });

  // Images and flavors: the same shape.
  const images = program
    .command('images')
    .description('images (list/get: any tenant; create/update/delete: cloud-operator)');
  const imageColumns: Column<Image>[] = [
    ['ID', (i) => i.id],
    ['NAME', (i) => i.name],
    ['OS', (i) => i.os],
    ['MIN DISK GB', (i) => i.min_disk_gb],
    ['MIN RAM MB', (i) => i.min_ram_mb],
    ['VISIBILITY', (i) => i.visibility],
  ];
  images
    .command('list')
    .description('images')
    .option('--ops', 'the ops view, with provider_refs')
    .action(async (opts: { ops?: boolean }, cmd: Command) => {
      const { client, format } = session(cmd);
      const items = opts.ops
        ? await list(listAll(client, '/v1/ops/images', {}))
        : await list(listAll(client, '/v1/images', {}));
      rt.out(renderList<Image>(items, format, imageColumns));
    });
  images
    .command('get <id>')
    .description('one image')
    .action(async (id: string, _opts, cmd: Command) => {
      const { client, format } = session(cmd);
      rt.out(renderOne(unwrap(await client.GET('/v1/images/{id}', { params: { path: { id } } })), format));
    });
  fileOption(
    images
      .command('create')
      .description('create an image: {name, os, min_disk_gb, min_ram_mb, visibility, provider_refs}'),
  ).action(async (opts: { file?: string }, cmd: Command) => {
    const { client, format } = session(cmd);
    rt.out(renderOne(unwrap(await client.POST('/v1/ops/images', { body: await body(opts.file) })), format));
  });
  fileOption(images.command('update <id>').description('change an image (the fields given)')).action(
    async (id: string, opts: { file?: string }, cmd: Command) => {
      const { client, format } = session(cmd);
      rt.out(
        renderOne(
          unwrap(await client.PATCH('/v1/ops/images/{id}', { params: { path: { id } }, body: await body(opts.file) })),
          format,
        ),
      );
    },
  );
  images
    .command('delete <id>')
    .description('delete an image')
    .action(async (id: string, _opts, cmd: Command) => {
      const { client } = session(cmd);
      unwrap(await client.DELETE('/v1/ops/images/{id}', { params: { path: { id } } }));
      done(cmd, `image ${id}`);
    });

  const flavors = program
    .command('flavors')
    .description('flavors (list/get: any tenant; create/update/delete: cloud-operator)');
  const flavorColumns: Column<Flavor>[] = [
    ['ID', (f) => f.id],
    ['NAME', (f) => f.name],
    ['VCPUS', (f) => f.vcpus],
    ['RAM MB', (f) => f.ram_mb],
    ['DISK GB', (f) => f.disk_gb],
  ];
  flavors
    .command('list')
    .description('flavors')
    .option('--ops', 'the ops view')
    .action(async (opts: { ops?: boolean }, cmd: Command) => {
      const { client, format } = session(cmd);
      const items = opts.ops
        ? await list(listAll(client, '/v1/ops/flavors', {}))
        : await list(listAll(client, '/v1/flavors', {}));
      rt.out(renderList<Flavor>(items, format, flavorColumns));
    });
  flavors
    .command('get <id>')
    .description('one flavor')
    .action(async (id: string, _opts, cmd: Command) => {
      const { client, format } = session(cmd);
      rt.out(renderOne(unwrap(await client.GET('/v1/flavors/{id}', { params: { path: { id } } })), format));
    });
  fileOption(flavors.command('create').description('create a flavor: {name, vcpus, ram_mb, disk_gb, extras?}')).action(
    async (opts: { file?: string }, cmd: Command) => {
      const { client, format } = session(cmd);
      rt.out(renderOne(unwrap(await client.POST('/v1/ops/flavors', { body: await body(opts.file) })), format));
    },
  );
  fileOption(flavors.command('update <id>').description('change a flavor (the fields given)')).action(
    async (id: string, opts: { file?: string }, cmd: Command) => {
      const { client, format } = session(cmd);
      rt.out(
        renderOne(
          unwrap(await client.PATCH('/v1/ops/flavors/{id}', { params: { path: { id } }, body: await body(opts.file) })),
          format,
        ),
      );
    },
  );
  flavors
    .command('delete <id>')
    .description('delete a flavor')
    .action(async (id: string, _opts, cmd: Command) => {
      const { client } = session(cmd);
      unwrap(await client.DELETE('/v1/ops/flavors/{id}', { params: { path: { id } } }));
      done(cmd, `flavor ${id}`);
    });

  // Quotas.
  const quotas = program.command('quotas').description("a project's quotas (get: viewer; set: cloud-operator)");
  quotas
    .command('get')
    .description('limits and usage of the project')
    .action(async (_opts, cmd: Command) => {
      const { client, format, connection } = session(cmd);
      const project_id = requireProject(connection);
      rt.out(
        renderOne(
          unwrap(await client.GET('/v1/projects/{project_id}/quotas', { params: { path: { project_id } } })),
          format,
        ),
      );
    });
  quotas
    .command('set')
    .description("set the project's limits (all four)")
    .requiredOption('--instances <n>', 'VMs', integer)
    .requiredOption('--vcpus <n>', 'vCPUs', integer)
    .requiredOption('--ram-mb <n>', 'memory, MB', integer)
    .requiredOption('--disk-gb <n>', 'disk, GB', integer)
    .action(async (opts: { instances: number; vcpus: number; ramMb: number; diskGb: number }, cmd: Command) => {
      const { client, format, connection } = session(cmd);
      const project_id = requireProject(connection);
      const limits: Schemas['SetQuotaDto'] = {
        instances: opts.instances,
        vcpus: opts.vcpus,
        ram_mb: opts.ramMb,
        disk_gb: opts.diskGb,
      };
      rt.out(
        renderOne(
          unwrap(
            await client.PUT('/v1/ops/projects/{project_id}/quotas', {
              params: { path: { project_id } },
              body: limits,
            }),
          ),
          format,
        ),
      );
    });

  // Providers.
  const providers = program.command('providers').description('providers (infra-admin; cloud-operator reads)');
  providers
    .command('list')
    .description('providers and their health')
    .action(async (_opts, cmd: Command) => {
      const { client, format } = session(cmd);
      const items = await list(listAll(client, '/v1/ops/providers', {}));
      rt.out(
        renderList<Provider>(items, format, [
          ['ID', (p) => p.id],
          ['NAME', (p) => p.name],
          ['TYPE', (p) => p.type],
          ['ENDPOINT', (p) => p.endpoint],
          ['HEALTH', (p) => p.health.status],
          ['CHECKED', (p) => p.health.checked_at],
        ]),
      );
    });
  providers
    .command('get <id>')
    .description('one provider (never its credentials)')
    .action(async (id: string, _opts, cmd: Command) => {
      const { client, format } = session(cmd);
      rt.out(renderOne(unwrap(await client.GET('/v1/ops/providers/{id}', { params: { path: { id } } })), format));
    });
  fileOption(
    providers
      .command('create')
      .description('register a provider: {name, type, endpoint?, credentials?, tls?, settings?}'),
  ).action(async (opts: { file?: string }, cmd: Command) => {
    const { client, format } = session(cmd);
    rt.out(renderOne(unwrap(await client.POST('/v1/ops/providers', { body: await body(opts.file) })), format));
  });
  fileOption(providers.command('update <id>').description('change a provider (the fields given)')).action(
    async (id: string, opts: { file?: string }, cmd: Command) => {
      const { client, format } = session(cmd);
      rt.out(
        renderOne(
          unwrap(
            await client.PATCH('/v1/ops/providers/{id}', { params: { path: { id } }, body: await body(opts.file) }),
          ),
          format,
        ),
      );
    },
  );
  providers
    .command('delete <id>')
    .description('delete a provider')
    .action(async (id: string, _opts, cmd: Command) => {
      const { client } = session(cmd);
      unwrap(await client.DELETE('/v1/ops/providers/{id}', { params: { path: { id } } }));
      done(cmd, `provider ${id}`);
    });
  providers
    .command('check <id>')
    .description('check that HCP reaches the provider now')
    .action(async (id: string, _opts, cmd: Command) => {
      const { client, format } = session(cmd);
      rt.out(
        renderOne(unwrap(await client.POST('/v1/ops/providers/{id}/check', { params: { path: { id } } })), format),
      );
    });

  // Clusters.
  const clusters = program.command('clusters').description('clusters (infra-admin; cloud-operator reads)');
  clusters
    .command('list')
    .description('clusters')
    .action(async (_opts, cmd: Command) => {
      const { client, format } = session(cmd);
      const items = await list(listAll(client, '/v1/ops/clusters', {}));
      rt.out(
        renderList<Cluster>(items, format, [
          ['ID', (c) => c.id],
          ['NAME', (c) => c.name],
          ['PROVIDER', (c) => c.provider_id],
          ['ENABLED', (c) => c.enabled],
          [
            'CAPACITY',
            (c) => (c.capacity ? `${c.capacity.vcpus} vCPU, ${c.capacity.ram_mb} MB, ${c.capacity.disk_gb} GB` : null),
          ],
        ]),
      );
    });
  clusters
    .command('get <id>')
    .description('one cluster')
    .action(async (id: string, _opts, cmd: Command) => {
      const { client, format } = session(cmd);
      rt.out(renderOne(unwrap(await client.GET('/v1/ops/clusters/{id}', { params: { path: { id } } })), format));
    });
  fileOption(
    clusters
      .command('create')
      .description('register a cluster: {name, provider_id, placement_hints?, capacity?, enabled?}'),
  ).action(async (opts: { file?: string }, cmd: Command) => {
    const { client, format } = session(cmd);
    rt.out(renderOne(unwrap(await client.POST('/v1/ops/clusters', { body: await body(opts.file) })), format));
  });
  fileOption(clusters.command('update <id>').description('change a cluster (the fields given)')).action(
    async (id: string, opts: { file?: string }, cmd: Command) => {
      const { client, format } = session(cmd);
      rt.out(
        renderOne(
          unwrap(
            await client.PATCH('/v1/ops/clusters/{id}', { params: { path: { id } }, body: await body(opts.file) }),
          ),
          format,
        ),
      );
    },
  );
  clusters
    .command('delete <id>')
    .description('delete a cluster')
    .action(async (id: string, _opts, cmd: Command) => {
      const { client } = session(cmd);
      unwrap(await client.DELETE('/v1/ops/clusters/{id}', { params: { path: { id } } }));
      done(cmd, `cluster ${id}`);
    });
  clusters
    .command('enroll <id>')
    .description('a one-time bootstrap token for a host agent of the cluster (shown once)')
    .option('--expires-in <duration>', 'how long the token is good for (1m..24h)', '15m')
    .action(async (id: string, opts: { expiresIn: string }, cmd: Command) => {
      const { client, format } = session(cmd);
      const expires_in_s = Math.round(parseDuration(opts.expiresIn) / 1000);
      rt.out(
        renderOne(
          unwrap(
            await client.POST('/v1/ops/clusters/{id}/enrollments', {
              params: { path: { id } },
              body: { expires_in_s },
            }),
          ),
          format,
        ),
      );
    });

  // Hosts.
  const hosts = program.command('hosts').description('KVM hosts run by host agents (infra-admin)');
  hosts
    .command('list')
    .description('hosts')
    .option('--cluster <id>', 'only the hosts of this cluster')
    .action(async (opts: { cluster?: string }, cmd: Command) => {
      const { client, format } = session(cmd);
      const items = unwrap(
        await client.GET('/v1/ops/hosts', { params: { query: opts.cluster ? { cluster_id: opts.cluster } : {} } }),
      ).items;
      rt.out(
        renderList<Host>(items, format, [
          ['ID', (h) => h.id],
          ['HOSTNAME', (h) => h.hostname],
          ['CLUSTER', (h) => h.cluster_id],
          ['STATE', (h) => h.state],
          ['ONLINE', (h) => h.online],
          ['HEARTBEAT', (h) => h.last_heartbeat_at],
          ['GUESTS', (h) => h.guests.length],
        ]),
      );
    });
  hosts
    .command('get <id>')
    .description('one host')
    .action(async (id: string, _opts, cmd: Command) => {
      const { client, format } = session(cmd);
      rt.out(renderOne(unwrap(await client.GET('/v1/ops/hosts/{id}', { params: { path: { id } } })), format));
    });
  hosts
    .command('revoke <id>')
    .description("refuse the host's credential from its next request on")
    .action(async (id: string, _opts, cmd: Command) => {
      const { client, format } = session(cmd);
      rt.out(renderOne(unwrap(await client.POST('/v1/ops/hosts/{id}/revoke', { params: { path: { id } } })), format));
    });
  hosts
    .command('rotate <id>')
    .description('a new credential for the host (shown once); the old one stops working')
    .action(async (id: string, _opts, cmd: Command) => {
      const { client, format } = session(cmd);
      rt.out(renderOne(unwrap(await client.POST('/v1/ops/hosts/{id}/rotate', { params: { path: { id } } })), format));
    });

  // The audit trail.
  const audit = program.command('audit').description('the audit trail (security-auditor)');
  audit
    .command('list')
    .alias('replay')
    .description('audit records, oldest first, every page (filters as GET /v1/ops/audit)')
    .option('--actor <actor>', 'who')
    .option('--action <action>', 'what, e.g. vm.create')
    .option('--target <id>', 'the resource acted on')
    .option('--from <time>', 'RFC 3339, inclusive')
    .option('--to <time>', 'RFC 3339, exclusive')
    .action(
      async (opts: { actor?: string; action?: string; target?: string; from?: string; to?: string }, cmd: Command) => {
        const { client, format } = session(cmd);
        const project = rt.globals(cmd).project;
        const query = Object.fromEntries(
          Object.entries({ ...opts, project, limit: 200 }).filter(([, v]) => v !== undefined),
        );
        const items = await list(listAll(client, '/v1/ops/audit', { query }));
        rt.out(
          renderList<AuditRecord>(items, format, [
            ['TIME', (a) => a.timestamp],
            ['ACTOR', (a) => a.actor],
            ['ACTION', (a) => a.action],
            ['RESULT', (a) => a.result],
            ['PROJECT', (a) => a.project_id],
            ['TARGET', (a) => Object.values(a.target).join(',')],
            ['ERROR', (a) => a.error_code],
          ]),
        );
      },
    );

  // Projections.
  const projections = program.command('projections').description('read models and process managers (cloud-operator)');
  projections
    .command('list')
    .description('position, lag and dead letters of each projection')
    .action(async (_opts, cmd: Command) => {
      const { client, format } = session(cmd);
      const items = unwrap(await client.GET('/v1/ops/projections', {})).items;
      rt.out(renderList<Projection>(items, format, projectionColumns));
    });
  projections
    .command('rebuild <name>')
    .description('rebuild a read model beside the live one, then swap')
    .option('-w, --wait', 'wait until the rebuild has finished')
    .option('--timeout <duration>', 'with --wait: give up after this long (exit 5)', '10m')
    .action(async (name: string, opts: { wait?: boolean; timeout: string }, cmd: Command) => {
      const { client, format } = session(cmd);
      const timeoutMs = parseDuration(opts.timeout);
      const started = unwrap(await client.POST('/v1/ops/projections/{name}/rebuild', { params: { path: { name } } }));
      if (!opts.wait) return rt.out(renderOne(started, format));
      const projection = await rebuilt(client, name, timeoutMs);
      rt.err(`✔ projection ${name} rebuilt`);
      rt.out(renderOne(projection, format));
    });

  // Usage.
  program
    .command('usage')
    .description('VM-hours, vCPU-hours, GiB-hours and powered-off hours of a period (cloud-operator)')
    .requiredOption('--from <time>', 'RFC 3339, inclusive')
    .requiredOption('--to <time>', 'RFC 3339, exclusive')
    .option('--per-vm', 'a line per VM as well')
    .action(async (opts: { from: string; to: string; perVm?: boolean }, cmd: Command) => {
      const { client, format } = session(cmd);
      const project = rt.globals(cmd).project;
      const query = {
        from: opts.from,
        to: opts.to,
        ...(project ? { project } : {}),
        ...(opts.perVm ? { detail: 'vm' as const } : {}),
      };
      const report = unwrap(await client.GET('/v1/ops/usage', { params: { query } })) as unknown as UsageReport;
      if (format !== 'table') return rt.out(renderOne(report, format));
      const lines = [...report.groups, { project_id: 'total', zone: '', flavor_id: '', ...report.totals }];
      rt.out(
        renderList(lines, format, [
          ['PROJECT', (g) => g.project_id],
          ['ZONE', (g) => g.zone],
          ['FLAVOR', (g) => g.flavor_id],
          ['VMS', (g) => g.vms],
          ['VM HOURS', (g) => g.vm_hours],
          ['VCPU HOURS', (g) => g.vcpu_hours],
          ['GIB HOURS', (g) => g.gib_hours],
          ['OFF HOURS', (g) => g.powered_off_hours],
        ]),
      );
      rt.err(`measured until ${report.measured_until}`);
    });
}

interface UsageFigures {
  vms?: number;
  vm_hours: number;
  vcpu_hours: number;
  gib_hours: number;
  powered_off_hours: number;
}
interface UsageReport {
  measured_until: string;
  groups: Array<UsageFigures & { project_id: string; zone: string; flavor_id: string }>;
  totals: UsageFigures;
}

const projectionColumns: Column<Projection>[] = [
  ['NAME', (p) => p.name],
  ['KIND', (p) => p.kind],
  ['POSITION', (p) => p.position],
  ['LAG', (p) => p.lag],
  ['REBUILDING', (p) => p.rebuilding],
  ['DEAD LETTERS', (p) => p.dead_letters],
];

/** Reads the projection until it is no longer rebuilding; TIMED_OUT past the deadline. */
async function rebuilt(client: HcpClient, name: string, timeoutMs: number): Promise<Projection> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const projection = unwrap(await client.GET('/v1/ops/projections', {})).items.find((p) => p.name === name);
    if (!projection) throw new UsageError(`no projection named ${name}`);
    if (!projection.rebuilding) return projection;
    if (Date.now() >= deadline)
      throw new OutcomeError(EXIT.TIMED_OUT, `projection ${name} still rebuilding after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

function fileOption(cmd: Command): Command {
  return cmd.option('-f, --file <file>', 'the request body, YAML or JSON ("-": standard input)');
}

function integer(value: string): number {
  if (!/^\d+$/.test(value)) throw new UsageError(`"${value}" is not a whole number`);
  return Number(value);
}
