import { readFileSync } from 'node:fs';
import { type HcpClient, type Job, listAll, unwrap, type Vm } from '@hcp/client';
import { Command, InvalidArgumentError } from 'commander';
import { requireProject } from '../config/connection';
import { parseDuration } from '../duration';
import { UsageError } from '../exit-codes';
import { Column, renderList, renderOne } from '../output/output';
import { watchJob } from '../progress/watch-job';
import { CliRuntime } from '../runtime';
import { JobStartOptions, jobStartOptions, startJob } from './job-start';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const VM_COLUMNS: Column<Vm>[] = [
  ['ID', (vm) => vm.id],
  ['NAME', (vm) => vm.name],
  ['ZONE', (vm) => vm.zone],
  ['STATUS', (vm) => vm.status],
  ['DESIRED', (vm) => vm.desired_state],
  ['ADDRESSES', (vm) => vm.addresses.map((a) => a.address).join(',')],
  ['CREATED', (vm) => vm.created_at],
];

export const JOB_COLUMNS: Column<Job>[] = [
  ['ID', (j) => j.id],
  ['TYPE', (j) => j.type],
  ['STATUS', (j) => j.status],
  ['RESOURCE', (j) => j.resource_id],
  ['ATTEMPTS', (j) => j.attempts],
  ['CREATED', (j) => j.created_at],
  ['ERROR', (j) => (j.error ? `${j.error.code}: ${j.error.message}` : null)],
];

const collect = (value: string, previous: string[]) => [...previous, value];

/** `hcp vms ...` and `hcp jobs ...`: a project's VMs and the jobs that change them. */
export function vmCommands(program: Command, rt: CliRuntime): void {
  const vms = program.command('vms').description("a project's VMs");

  vms
    .command('list')
    .description('list VMs (every page)')
    .option('--status <status>', 'only VMs in this status')
    .option('--zone <zone>', 'only VMs in this zone')
    .option('--name <name>', 'only VMs with this name')
    .option('--tag <key:value>', 'only VMs with this tag (repeatable)', collect, [])
    .option('--page-size <n>', 'VMs asked for per request (1..200)', pageSize, 200)
    .action(
      async (
        opts: { status?: string; zone?: string; name?: string; tag: string[]; pageSize: number },
        cmd: Command,
      ) => {
        const connection = rt.connection(cmd);
        const client = rt.client(connection);
        const project = requireProject(connection);
        const query = {
          ...(opts.status ? { status: opts.status as Vm['status'] } : {}),
          ...(opts.zone ? { zone: opts.zone } : {}),
          ...(opts.name ? { name: opts.name } : {}),
          ...(opts.tag.length ? { tag: opts.tag } : {}),
          limit: opts.pageSize,
        };
        const items: Vm[] = [];
        for await (const vm of listAll(client, '/v1/projects/{project_id}/vms', {
          path: { project_id: project },
          query,
        }))
          items.push(vm);
        rt.out(renderList(items, rt.format(cmd), VM_COLUMNS));
      },
    );

  vms
    .command('get <vm>')
    .description('one VM, by id or name')
    .action(async (ref: string, _opts, cmd: Command) => {
      const connection = rt.connection(cmd);
      const client = rt.client(connection);
      const project = requireProject(connection);
      const id = await resolveVm(client, project, ref);
      const vm = unwrap(
        await client.GET('/v1/projects/{project_id}/vms/{vm_id}', {
          params: { path: { project_id: project, vm_id: id } },
        }),
      );
      rt.out(renderOne(vm, rt.format(cmd)));
    });

  jobStartOptions(
    vms
      .command('create <name>')
      .description('create a VM (image and flavor by name or id; the zone may be left out when there is one)')
      .option('--zone <zone>', 'zone to place it in (hcp zones list)')
      .requiredOption('--image <image>', 'image name or id (hcp images list)')
      .requiredOption('--flavor <flavor>', 'flavor name or id (hcp flavors list)')
      .option('--tag <key=value>', 'a tag (repeatable)', collect, [])
      .option('--metadata <key=value>', 'a metadata entry (repeatable)', collect, [])
      .option('--ssh-key <key>', 'an SSH public key, or @file (repeatable)', collect, [])
      .option('--user-data <file>', 'cloud-init user data from a file')
      .option('--no-power-on', 'leave it stopped once created'),
  ).action(async (name: string, opts: CreateOptions, cmd: Command) => {
    const connection = rt.connection(cmd);
    const client = rt.client(connection);
    const project = requireProject(connection);
    const [zone, image_id, flavor_id] = await Promise.all([
      opts.zone ?? onlyZone(client),
      catalogId(client, 'image', opts.image),
      catalogId(client, 'flavor', opts.flavor),
    ]);
    const body = {
      name,
      zone,
      image_id,
      flavor_id,
      ...(opts.tag.length ? { tags: pairs(opts.tag, '--tag') } : {}),
      ...(opts.metadata.length ? { metadata: pairs(opts.metadata, '--metadata') } : {}),
      ...(opts.sshKey.length ? { ssh_keys: opts.sshKey.map(fileOrValue) } : {}),
      ...(opts.userData ? { user_data: fileOrValue(`@${opts.userData}`) } : {}),
      ...(opts.powerOn === false ? { power_on: false } : {}),
    };
    await startJob(rt, cmd, client, project, opts, async (headers) =>
      unwrap(
        await client.POST('/v1/projects/{project_id}/vms', {
          params: { path: { project_id: project } },
          headers,
          body,
        }),
      ),
    );
  });

  for (const action of ['start', 'stop', 'reboot'] as const) {
    const command = vms.command(`${action} <vm>`).description(`${action} a VM (by id or name)`);
    if (action !== 'start') command.option('--force', action === 'stop' ? 'power off at once' : 'reset at once');
    jobStartOptions(command).action(async (ref: string, opts: JobStartOptions & { force?: boolean }, cmd: Command) => {
      const connection = rt.connection(cmd);
      const client = rt.client(connection);
      const project = requireProject(connection);
      const vm_id = await resolveVm(client, project, ref);
      const path = { project_id: project, vm_id };
      await startJob(rt, cmd, client, project, opts, async (headers) => {
        if (action === 'start')
          return unwrap(
            await client.POST('/v1/projects/{project_id}/vms/{vm_id}/actions/start', {
              params: { path },
              headers,
              body: {},
            }),
          );
        const body = { force: opts.force === true };
        return action === 'stop'
          ? unwrap(
              await client.POST('/v1/projects/{project_id}/vms/{vm_id}/actions/stop', {
                params: { path },
                headers,
                body,
              }),
            )
          : unwrap(
              await client.POST('/v1/projects/{project_id}/vms/{vm_id}/actions/reboot', {
                params: { path },
                headers,
                body,
              }),
            );
      });
    });
  }

  jobStartOptions(vms.command('delete <vm>').description('delete a VM (by id or name)')).action(
    async (ref: string, opts: JobStartOptions, cmd: Command) => {
      const connection = rt.connection(cmd);
      const client = rt.client(connection);
      const project = requireProject(connection);
      const vm_id = await resolveVm(client, project, ref);
      await startJob(rt, cmd, client, project, opts, async (headers) =>
        unwrap(
          await client.DELETE('/v1/projects/{project_id}/vms/{vm_id}', {
            params: { path: { project_id: project, vm_id } },
            headers,
          }),
        ),
      );
    },
  );

  const jobs = program.command('jobs').description("a project's jobs");
  jobs
    .command('list')
    .description('list jobs (every page)')
    .option('--status <status>', 'queued, running, succeeded or failed')
    .option('--resource <id>', 'only the jobs of this resource')
    .action(async (opts: { status?: Job['status']; resource?: string }, cmd: Command) => {
      const connection = rt.connection(cmd);
      const client = rt.client(connection);
      const project = requireProject(connection);
      const query = {
        ...(opts.status ? { status: opts.status } : {}),
        ...(opts.resource ? { resource_id: opts.resource } : {}),
        limit: 200,
      };
      const items: Job[] = [];
      for await (const job of listAll(client, '/v1/projects/{project_id}/jobs', {
        path: { project_id: project },
        query,
      }))
        items.push(job);
      rt.out(renderList(items, rt.format(cmd), JOB_COLUMNS));
    });
  jobs
    .command('get <job>')
    .description('one job')
    .action(async (jobId: string, _opts, cmd: Command) => {
      const connection = rt.connection(cmd);
      const client = rt.client(connection);
      const project = requireProject(connection);
      const job = unwrap(
        await client.GET('/v1/projects/{project_id}/jobs/{job_id}', {
          params: { path: { project_id: project, job_id: jobId } },
        }),
      );
      rt.out(renderOne(job, rt.format(cmd)));
    });
  jobs
    .command('watch <job>')
    .description('follow a job to its end with a live display; exit code says how it ended')
    .option('--timeout <duration>', 'give up after this long (exit 5)', '10m')
    .action(async (jobId: string, opts: { timeout: string }, cmd: Command) => {
      const connection = rt.connection(cmd);
      const client = rt.client(connection);
      const project = requireProject(connection);
      const format = rt.format(cmd);
      const job = await watchJob(client, project, jobId, {
        timeoutMs: parseDuration(opts.timeout),
        display: rt.io.stderr,
      });
      if (format !== 'table' || !(rt.io.stdout.isTTY && rt.io.stderr.isTTY)) rt.out(renderOne(job, format));
    });
}

interface CreateOptions extends JobStartOptions {
  zone?: string;
  image: string;
  flavor: string;
  tag: string[];
  metadata: string[];
  sshKey: string[];
  userData?: string;
  powerOn?: boolean;
}

/** A VM's id: the id itself, or the one VM of the project with that name. */
async function resolveVm(client: HcpClient, project: string, ref: string): Promise<string> {
  if (UUID.test(ref)) return ref;
  const matches: Vm[] = [];
  for await (const vm of listAll(client, '/v1/projects/{project_id}/vms', {
    path: { project_id: project },
    query: { name: ref },
  }))
    if (vm.name === ref && vm.status !== 'deleted') matches.push(vm);
  if (matches.length === 1) return matches[0].id;
  if (matches.length === 0) throw new UsageError(`no VM named "${ref}" in project ${project}`);
  throw new UsageError(
    `${matches.length} VMs are named "${ref}"; give the id (${matches.map((v) => v.id).join(', ')})`,
  );
}

/** The id of an image or flavor given by id or name. */
async function catalogId(client: HcpClient, kind: 'image' | 'flavor', ref: string): Promise<string> {
  const items: Array<{ id: string; name: string }> = [];
  const list = kind === 'image' ? listAll(client, '/v1/images', {}) : listAll(client, '/v1/flavors', {});
  for await (const item of list) items.push(item);
  const found = items.find((i) => i.id === ref) ?? items.find((i) => i.name === ref);
  if (found) return found.id;
  throw new UsageError(`no ${kind} "${ref}"; ${kind}s: ${items.map((i) => i.name).join(', ') || 'none'}`);
}

/** The zone when HCP offers exactly one; otherwise --zone is needed. */
async function onlyZone(client: HcpClient): Promise<string> {
  const zones: string[] = [];
  for await (const zone of listAll(client, '/v1/zones', {})) zones.push(zone.id);
  if (zones.length === 1) return zones[0];
  throw new UsageError(`--zone is needed; zones: ${zones.join(', ') || 'none'}`);
}

function pageSize(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 200) throw new InvalidArgumentError('a whole number from 1 to 200');
  return n;
}

function pairs(values: string[], flag: string): Record<string, string> {
  return Object.fromEntries(
    values.map((v) => {
      const at = v.indexOf('=');
      if (at <= 0) throw new UsageError(`${flag} takes key=value, not "${v}"`);
      return [v.slice(0, at), v.slice(at + 1)];
    }),
  );
}

function fileOrValue(value: string): string {
  if (!value.startsWith('@')) return value;
  try {
    return readFileSync(value.slice(1), 'utf8').trim();
  } catch (err) {
    throw new UsageError(`cannot read ${value.slice(1)}: ${(err as Error).message}`);
  }
}
