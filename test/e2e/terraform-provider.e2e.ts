import { ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { ApiClient, eventually } from '../support/api-client';
import { HcpProcess } from '../support/hcp-process';
import { whileSimulatorHoldsVm } from '../support/simulator-hold';
import { createTestDatabase, queryDatabase, TestDatabase } from '../support/test-database';

// Acceptance tests of terraform-provider-hcp: OpenTofu (HCP_TOFU_BIN, built by .ci/opentofu.sh) drives
// the provider, built here from the repository's sources, against a real HCP on a simulator catalog.

const ROOT = path.join(__dirname, '..', '..');
const PROVIDER_SRC = path.join(ROOT, 'terraform-provider-hcp');
const DEFAULT_TOFU = '/var/cache/hcp-opentofu/1.10.10/tofu';
const TOFU = process.env.HCP_TOFU_BIN ?? (existsSync(DEFAULT_TOFU) ? DEFAULT_TOFU : undefined);
const PROJECT = 'tf';
const STEP_TIMEOUT = 300_000;

const run = promisify(execFile);
const goPath = `${process.env.PATH ?? ''}:/usr/local/go/bin`;

function describeWithTofu(name: string, body: () => void): void {
  if (TOFU && existsSync(TOFU)) {
    describe(name, body);
    return;
  }
  if (process.env.CI === 'true') {
    describe(name, () => {
      it('needs OpenTofu (HCP_TOFU_BIN), which CI builds with .ci/opentofu.sh', () => {
        throw new Error(`OpenTofu is not available: HCP_TOFU_BIN is ${TOFU ?? 'unset'}`);
      });
    });
    return;
  }
  console.warn(`skipping "${name}": OpenTofu is not available (run bash .ci/opentofu.sh and set HCP_TOFU_BIN)`);
  describe.skip(name, body);
}

interface TofuResult {
  code: number;
  stdout: string;
  stderr: string;
}

describeWithTofu('Terraform provider (OpenTofu against a running HCP)', () => {
  let db: TestDatabase;
  let hcp: HcpProcess;
  let api: ApiClient;
  let work: string;
  let cliConfig: string;
  // The HCP that tofu talks to: the suite's, or a nested block's own.
  let target: HcpProcess;

  beforeAll(async () => {
    work = mkdtempSync(path.join(tmpdir(), 'hcp-tofu-'));
    const pluginDir = path.join(work, 'plugins');
    mkdirSync(pluginDir);
    // Built from the sources under test (go's build cache makes a rebuild quick).
    await run('go', ['build', '-o', path.join(pluginDir, 'terraform-provider-hcp'), '.'], {
      cwd: PROVIDER_SRC,
      env: { ...process.env, PATH: goPath },
    });
    // dev_overrides: tofu takes the provider from the folder, without init or any registry.
    cliConfig = path.join(work, 'tofu.tfrc');
    writeFileSync(
      cliConfig,
      `provider_installation {\n  dev_overrides {\n    "registry.opentofu.org/hcp/hcp" = "${pluginDir}"\n  }\n  direct {}\n}\n`,
    );
    db = await createTestDatabase();
    hcp = await HcpProcess.start({ databaseUrl: db.url, env: { HCP_SIMULATOR_LATENCY_SCALE: '1' } });
    api = new ApiClient(hcp.baseUrl, hcp.token('tf-admin', { [PROJECT]: 'admin' }));
    target = hcp;
  }, STEP_TIMEOUT);

  afterAll(async () => {
    await hcp?.stop();
    hcp?.removeDataDir();
    await db?.drop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  function tofuEnv(): NodeJS.ProcessEnv {
    return {
      PATH: process.env.PATH ?? '',
      HOME: work,
      TF_CLI_CONFIG_FILE: cliConfig,
      TF_IN_AUTOMATION: '1',
      CHECKPOINT_DISABLE: '1',
      HCP_URL: target.baseUrl,
      HCP_TOKEN: target.token('tf-admin', { [PROJECT]: 'admin' }),
      HCP_PROJECT: PROJECT,
    };
  }

  function tofu(dir: string, ...args: string[]): Promise<TofuResult> {
    return new Promise((resolve) => {
      execFile(TOFU!, [...args], { cwd: dir, env: tofuEnv(), maxBuffer: 64 << 20 }, (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
        resolve({ code, stdout, stderr });
      });
    });
  }

  async function apply(dir: string): Promise<TofuResult> {
    const res = await tofu(dir, 'apply', '-auto-approve', '-input=false', '-no-color');
    if (res.code !== 0) throw new Error(`tofu apply failed (${res.code}):\n${res.stdout}\n${res.stderr}`);
    return res;
  }

  async function outputs(dir: string): Promise<Record<string, any>> {
    const res = await tofu(dir, 'output', '-json', '-no-color');
    if (res.code !== 0) throw new Error(`tofu output failed:\n${res.stderr}`);
    const parsed = JSON.parse(res.stdout) as Record<string, { value: unknown }>;
    return Object.fromEntries(Object.entries(parsed).map(([k, v]) => [k, v.value]));
  }

  function workspace(name: string, mainTf: string): string {
    const dir = path.join(work, name);
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, 'main.tf'), mainTf);
    return dir;
  }

  /** tofu in its own process group, so a kill takes the provider plugin with it, as a dying CI runner would. */
  function spawnTofu(dir: string, ...args: string[]): { child: ChildProcess; exited: Promise<void>; kill: () => void } {
    const child = spawn(TOFU!, args, { cwd: dir, env: tofuEnv(), detached: true, stdio: 'ignore' });
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    const kill = () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
    };
    return { child, exited, kill };
  }

  function vmConfig(name: string, opts: { tags?: Record<string, string>; power_state?: string } = {}): string {
    const tags = Object.entries(opts.tags ?? {})
      .map(([k, v]) => `    ${k} = "${v}"`)
      .join('\n');
    return `
terraform {
  required_providers {
    hcp = { source = "hcp/hcp" }
  }
}
provider "hcp" {}
data "hcp_images" "debian" { name = "debian-12" }
data "hcp_flavors" "small" { name = "small" }
resource "hcp_vm" "web" {
  name        = "${name}"
  zone        = "local"
  image_id    = data.hcp_images.debian.images[0].id
  flavor_id   = data.hcp_flavors.small.flavors[0].id
  power_state = "${opts.power_state ?? 'running'}"
  tags = {
${tags}
  }
}
output "vm_id" { value = hcp_vm.web.id }
output "status" { value = hcp_vm.web.status }
output "addresses" { value = hcp_vm.web.addresses }
`;
  }

  async function vm(id: string): Promise<any> {
    const res = await api.get(`/v1/projects/${PROJECT}/vms/${id}`);
    expect(res.status).toBe(200);
    return res.body;
  }

  async function liveVmsNamed(name: string): Promise<any[]> {
    return (await api.get(`/v1/projects/${PROJECT}/vms?name=${encodeURIComponent(name)}`)).body.items;
  }

  it(
    'lists the catalog through hcp_zones, hcp_images and hcp_flavors, with their filters',
    async () => {
      const dir = workspace(
        'catalog',
        `
terraform {
  required_providers {
    hcp = { source = "hcp/hcp" }
  }
}
data "hcp_zones" "all" {}
data "hcp_images" "all" {}
data "hcp_images" "debian" { name = "debian-12" }
data "hcp_flavors" "all" {}
data "hcp_flavors" "big" { min_vcpus = 2 }
output "zones" { value = data.hcp_zones.all.zones }
output "images" { value = data.hcp_images.all.images }
output "debian" { value = data.hcp_images.debian.images }
output "flavors" { value = data.hcp_flavors.all.flavors }
output "big" { value = data.hcp_flavors.big.flavors[*].name }
`,
      );
      await apply(dir);
      const out = await outputs(dir);
      const zones = (await api.get('/v1/zones')).body.items;
      const images = (await api.get('/v1/images')).body.items;
      const flavors = (await api.get('/v1/flavors')).body.items;
      expect(out.zones.map((z: any) => z.id)).toEqual(zones.map((z: any) => z.id));
      expect(out.zones.find((z: any) => z.id === 'local')).toMatchObject({
        policy: zones[0].policy,
        reboot: zones[0].capabilities.reboot,
      });
      expect(out.images.map((i: any) => [i.id, i.name, i.os])).toEqual(images.map((i: any) => [i.id, i.name, i.os]));
      expect(out.debian).toEqual([
        expect.objectContaining({ name: 'debian-12', id: images.find((i: any) => i.name === 'debian-12').id }),
      ]);
      expect(out.flavors.map((f: any) => [f.id, f.name, f.vcpus, f.ram_mb, f.disk_gb])).toEqual(
        flavors.map((f: any) => [f.id, f.name, f.vcpus, f.ram_mb, f.disk_gb]),
      );
      expect(out.big).toEqual(flavors.filter((f: any) => f.vcpus >= 2).map((f: any) => f.name));
      expect(out.big.length).toBeGreaterThan(0);
    },
    STEP_TIMEOUT,
  );

  describe('hcp_vm through its life', () => {
    let dir: string;
    let vmId: string;

    it(
      'apply creates the VM and waits until HCP shows it running',
      async () => {
        dir = workspace('life', vmConfig('tf-web', { tags: { env: 'dev' } }));
        await apply(dir);
        const out = await outputs(dir);
        vmId = out.vm_id;
        expect(out.status).toBe('running');
        const seen = await vm(vmId);
        expect(seen).toMatchObject({ name: 'tf-web', zone: 'local', status: 'running', tags: { env: 'dev' } });
        expect(out.addresses).toEqual(seen.addresses);
        expect(out.addresses.length).toBeGreaterThan(0);
      },
      STEP_TIMEOUT,
    );

    it(
      'a second plan of the same configuration has nothing to do',
      async () => {
        const plan = await tofu(dir, 'plan', '-detailed-exitcode', '-input=false', '-no-color');
        expect({ code: plan.code, out: plan.stdout.includes('No changes') }).toEqual({ code: 0, out: true });
      },
      STEP_TIMEOUT,
    );

    it(
      'changes tags in place: the same VM, with the new tags',
      async () => {
        writeFileSync(path.join(dir, 'main.tf'), vmConfig('tf-web', { tags: { env: 'prod', team: 'web' } }));
        const res = await apply(dir);
        expect(res.stdout).toMatch(/1 changed, 0 destroyed/);
        expect((await outputs(dir)).vm_id).toBe(vmId);
        expect((await vm(vmId)).tags).toEqual({ env: 'prod', team: 'web' });
      },
      STEP_TIMEOUT,
    );

    it(
      'power_state stopped stops the VM in place, and running starts it again',
      async () => {
        writeFileSync(
          path.join(dir, 'main.tf'),
          vmConfig('tf-web', { tags: { env: 'prod', team: 'web' }, power_state: 'stopped' }),
        );
        await apply(dir);
        expect((await outputs(dir)).status).toBe('stopped');
        expect(await vm(vmId)).toMatchObject({ status: 'stopped', desired_state: 'stopped', addresses: [] });

        writeFileSync(path.join(dir, 'main.tf'), vmConfig('tf-web', { tags: { env: 'prod', team: 'web' } }));
        await apply(dir);
        expect(await vm(vmId)).toMatchObject({ status: 'running', desired_state: 'running' });
        const jobs = (await api.get(`/v1/projects/${PROJECT}/jobs?resource_id=${vmId}`)).body.items;
        expect(jobs.map((j: { type: string }) => j.type)).toEqual(['vm.start', 'vm.stop', 'vm.create']);
      },
      STEP_TIMEOUT,
    );

    it(
      'imports the VM by project/id and by id into a new state, and the plan is then empty',
      async () => {
        for (const [name, address] of [
          ['imported-full', `${PROJECT}/${vmId}`],
          ['imported-id', vmId],
        ]) {
          const other = workspace(name, vmConfig('tf-web', { tags: { env: 'prod', team: 'web' } }));
          const imported = await tofu(other, 'import', '-input=false', '-no-color', 'hcp_vm.web', address);
          expect({ code: imported.code, stderr: imported.stderr }).toEqual({ code: 0, stderr: expect.any(String) });
          const plan = await tofu(other, 'plan', '-detailed-exitcode', '-input=false', '-no-color');
          expect({ code: plan.code, stdout: plan.stdout }).toEqual({
            code: 0,
            stdout: expect.stringContaining('No changes'),
          });
          const state = await tofu(other, 'state', 'show', '-no-color', 'hcp_vm.web');
          expect(state.stdout).toContain(vmId);
        }
      },
      STEP_TIMEOUT,
    );

    it(
      'on an imported VM, ssh_keys in the configuration are recorded in place rather than replacing it',
      async () => {
        const key = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHlZYbNl7rMudkQn9R5hKhsnpmWCKkTr8PiDVkvtdFVY alice@laptop';
        const config = vmConfig('tf-web', { tags: { env: 'prod', team: 'web' } }).replace(
          '  power_state',
          `  ssh_keys    = ["${key}"]\n  power_state`,
        );
        const other = workspace('imported-keys', config);
        expect((await tofu(other, 'import', '-input=false', '-no-color', 'hcp_vm.web', vmId)).code).toBe(0);
        const plan = await tofu(other, 'plan', '-detailed-exitcode', '-input=false', '-no-color');
        expect(plan.code).toBe(2);
        expect(plan.stdout).toContain('0 to add, 1 to change, 0 to destroy');
        await apply(other);
        expect((await outputs(other)).vm_id).toBe(vmId);
        const after = await tofu(other, 'plan', '-detailed-exitcode', '-input=false', '-no-color');
        expect(after.code).toBe(0);
        // The VM that was created by this provider with none would be replaced by adding keys.
        writeFileSync(path.join(dir, 'main.tf'), config);
        const created = await tofu(dir, 'plan', '-input=false', '-no-color');
        expect(created.stdout).toContain('1 to add, 0 to change, 1 to destroy');
        writeFileSync(path.join(dir, 'main.tf'), vmConfig('tf-web', { tags: { env: 'prod', team: 'web' } }));
      },
      STEP_TIMEOUT,
    );

    it(
      'a VM stopped outside Terraform shows as a change, and the next apply starts it again',
      async () => {
        const stop = await api.post(`/v1/projects/${PROJECT}/vms/${vmId}/actions/stop`, { force: false });
        expect(stop.status).toBe(202);
        await eventually(async () => ((await vm(vmId)).status === 'stopped' ? true : undefined), 'VM stopped', 60_000);
        const plan = await tofu(dir, 'plan', '-detailed-exitcode', '-input=false', '-no-color');
        expect(plan.code).toBe(2);
        expect(plan.stdout).toMatch(/power_state\s+= "stopped" -> "running"/);
        await apply(dir);
        expect(await vm(vmId)).toMatchObject({ status: 'running', desired_state: 'running' });
      },
      STEP_TIMEOUT,
    );

    it(
      'changing the name replaces the VM',
      async () => {
        writeFileSync(path.join(dir, 'main.tf'), vmConfig('tf-web-2', { tags: { env: 'prod', team: 'web' } }));
        const res = await apply(dir);
        expect(res.stdout).toMatch(/1 added, 0 changed, 1 destroyed/);
        const newId = (await outputs(dir)).vm_id;
        expect(newId).not.toBe(vmId);
        expect((await vm(vmId)).status).toBe('deleted');
        expect((await vm(newId)).status).toBe('running');
        vmId = newId;
      },
      STEP_TIMEOUT,
    );

    it(
      'destroy deletes the VM and waits for it',
      async () => {
        const res = await tofu(dir, 'destroy', '-auto-approve', '-input=false', '-no-color');
        expect({ code: res.code, stderr: res.stderr }).toEqual({ code: 0, stderr: expect.any(String) });
        expect((await vm(vmId)).status).toBe('deleted');
        expect(await liveVmsNamed('tf-web-2')).toHaveLength(0);
      },
      STEP_TIMEOUT,
    );

    it(
      'applying the same configuration again after the destroy creates a new VM (the create key moves on)',
      async () => {
        await apply(dir);
        const again = (await outputs(dir)).vm_id;
        expect(again).not.toBe(vmId);
        expect(await vm(again)).toMatchObject({ name: 'tf-web-2', status: 'running' });
        const res = await tofu(dir, 'destroy', '-auto-approve', '-input=false', '-no-color');
        expect(res.code).toBe(0);
      },
      STEP_TIMEOUT,
    );
  });

  it(
    'an apply killed while the create runs, applied again, ends with one VM: the one the first apply made',
    async () => {
      const name = 'tf-interrupted';
      const dir = workspace('interrupted', vmConfig(name, { tags: { case: 'kill' } }));
      const { exited, kill } = spawnTofu(dir, 'apply', '-auto-approve', '-input=false', '-no-color');
      try {
        const row = await eventually(
          async () => {
            const rows = await queryDatabase<{ hcp_id: string }>(
              db.url,
              'SELECT hcp_id FROM simulator.vms WHERE name = $1',
              [name],
            );
            return rows[0];
          },
          'the first apply to start the create at the simulator',
          120_000,
        );

        // While the simulator holds the VM, its create cannot finish: the apply is killed mid-create.
        await whileSimulatorHoldsVm(db.url, row.hcp_id, async () => {
          kill();
          await exited;
          expect((await vm(row.hcp_id)).status).toBe('provisioning');
        });
        const statePath = path.join(dir, 'terraform.tfstate');
        const saved = existsSync(statePath) ? readFileSync(statePath, 'utf8') : '';
        expect(saved).not.toContain(row.hcp_id);

        await apply(dir);
        const out = await outputs(dir);
        expect(out.vm_id).toBe(row.hcp_id);
        expect(out.status).toBe('running');
        expect((await liveVmsNamed(name)).map((v: { id: string }) => v.id)).toEqual([row.hcp_id]);
        expect(await queryDatabase(db.url, 'SELECT hcp_id FROM simulator.vms WHERE name = $1', [name])).toHaveLength(1);
        const jobs = (await api.get(`/v1/projects/${PROJECT}/jobs?resource_id=${row.hcp_id}`)).body.items;
        expect(jobs.map((j: { type: string }) => j.type)).toEqual(['vm.create']);

        const destroyed = await tofu(dir, 'destroy', '-auto-approve', '-input=false', '-no-color');
        expect(destroyed.code).toBe(0);
      } finally {
        kill();
      }
    },
    STEP_TIMEOUT,
  );

  it(
    'a destroy killed while the delete runs, run again, waits for that same delete: one vm.delete job',
    async () => {
      const dir = workspace('interrupted-destroy', vmConfig('tf-interrupted-destroy'));
      await apply(dir);
      const id = (await outputs(dir)).vm_id;
      const { exited, kill } = spawnTofu(dir, 'destroy', '-auto-approve', '-input=false', '-no-color');
      try {
        // The simulator holds the VM, so its delete cannot finish: the destroy is killed mid-delete.
        await whileSimulatorHoldsVm(db.url, id, async () => {
          // The read side waits for the hold too, so the delete shows in the event store first.
          await eventually(
            async () => {
              const rows = await queryDatabase(
                db.url,
                "SELECT 1 FROM hcp_events WHERE stream_id = $1 AND type = 'VmDeleteRequested'",
                [`vm-${id}`],
              );
              return rows.length > 0 ? true : undefined;
            },
            'the delete to be requested',
            120_000,
          );
          kill();
          await exited;
        });
        expect(readFileSync(path.join(dir, 'terraform.tfstate'), 'utf8')).toContain(id);

        const again = await tofu(dir, 'destroy', '-auto-approve', '-input=false', '-no-color');
        expect({ code: again.code, stderr: again.stderr }).toEqual({ code: 0, stderr: expect.any(String) });
        expect((await vm(id)).status).toBe('deleted');
        const jobs = (await api.get(`/v1/projects/${PROJECT}/jobs?resource_id=${id}`)).body.items;
        expect(jobs.map((j: { type: string }) => j.type)).toEqual(['vm.delete', 'vm.create']);
      } finally {
        kill();
      }
    },
    STEP_TIMEOUT,
  );

  it(
    "the README's example (terraform-provider-hcp/examples/main.tf) applies as written, plans empty after, and destroys",
    async () => {
      const dir = workspace('example', readFileSync(path.join(PROVIDER_SRC, 'examples', 'main.tf'), 'utf8'));
      await apply(dir);
      const out = await outputs(dir);
      expect(await vm(out.vm_id)).toMatchObject({
        name: 'web-1',
        zone: 'local',
        status: 'running',
        tags: { env: 'dev', team: 'web' },
        metadata: { owner: 'platform' },
      });
      expect(out.addresses).toEqual((await vm(out.vm_id)).addresses);
      expect((await tofu(dir, 'plan', '-detailed-exitcode', '-input=false', '-no-color')).code).toBe(0);
      expect((await tofu(dir, 'destroy', '-auto-approve', '-input=false', '-no-color')).code).toBe(0);
      expect((await vm(out.vm_id)).status).toBe('deleted');
    },
    STEP_TIMEOUT,
  );

  it(
    'refuses a power_state other than running or stopped at plan, before anything reaches HCP',
    async () => {
      const dir = workspace('bad-power', vmConfig('tf-bad-power', { power_state: 'paused' }));
      const res = await tofu(dir, 'plan', '-input=false', '-no-color');
      expect(res.code).not.toBe(0);
      expect(res.stderr).toContain('power_state must be running or stopped, not "paused"');
      expect(await liveVmsNamed('tf-bad-power')).toHaveLength(0);
    },
    STEP_TIMEOUT,
  );

  it(
    'refuses an import id that is neither <project>/<vm id> nor a VM id, and one HCP does not have',
    async () => {
      const dir = workspace('bad-import', vmConfig('tf-bad-import'));
      const malformed = await tofu(dir, 'import', '-input=false', '-no-color', 'hcp_vm.web', 'a/b/c');
      expect(malformed.code).not.toBe(0);
      expect(malformed.stderr).toContain('Invalid import id');
      const absent = await tofu(
        dir,
        'import',
        '-input=false',
        '-no-color',
        'hcp_vm.web',
        '00000000-0000-4000-8000-000000000000',
      );
      expect(absent.code).not.toBe(0);
      expect(absent.stderr).toMatch(/Cannot import non-existent remote object/);
    },
    STEP_TIMEOUT,
  );

  it(
    'an HCP refusal reaches the user as a diagnostic with its code and message',
    async () => {
      const dir = workspace(
        'refused',
        vmConfig('tf-refused').replace('zone        = "local"', 'zone        = "no-such-zone"'),
      );
      const res = await tofu(dir, 'apply', '-auto-approve', '-input=false', '-no-color');
      expect(res.code).not.toBe(0);
      expect(res.stderr).toMatch(/HCP refused to create the VM/);
      expect(res.stderr).toMatch(/HCP answered 4\d\d [A-Z_]+: /);
      expect(await liveVmsNamed('tf-refused')).toHaveLength(0);
    },
    STEP_TIMEOUT,
  );
  describe('a create job that fails', () => {
    let failDb: TestDatabase;
    let failing: HcpProcess | undefined;
    let healed: HcpProcess | undefined;
    let failDir: string | undefined;

    beforeAll(async () => {
      failDb = await createTestDatabase();
      failing = await HcpProcess.start({
        databaseUrl: failDb.url,
        env: {
          HCP_SIMULATOR_LATENCY_SCALE: '0.05',
          HCP_SIMULATOR_FAULTS: 'create=fail:PROVIDER_UNAVAILABLE',
          HCP_JOB_MAX_ATTEMPTS: '1',
        },
      });
      failDir = failing.dataDir;
      target = failing;
    }, STEP_TIMEOUT);

    afterAll(async () => {
      target = hcp;
      await failing?.stop();
      await healed?.stop();
      if (failDir) rmSync(failDir, { recursive: true, force: true });
      await failDb?.drop();
    });

    it(
      'fails the apply with the job error, keeps the VM in the state as tainted, and the next apply replaces it',
      async () => {
        const dir = workspace('failed-create', vmConfig('tf-failing'));
        const res = await tofu(dir, 'apply', '-auto-approve', '-input=false', '-no-color');
        expect(res.code).not.toBe(0);
        expect(res.stderr).toContain("The VM's create job did not succeed");
        expect(res.stderr).toMatch(/failed:\s+PROVIDER_UNAVAILABLE: simulator create failed/);
        const shown = await tofu(dir, 'state', 'show', '-no-color', 'hcp_vm.web');
        expect(shown.stdout).toContain('tainted');
        const failedId = /^\s+id\s+= "([0-9a-f-]{36})"/m.exec(shown.stdout)?.[1];
        expect(failedId).toBeDefined();
        const failApi = api.asBase(failing!.baseUrl).as(failing!.token('tf-admin', { [PROJECT]: 'admin' }));
        expect((await failApi.get(`/v1/projects/${PROJECT}/vms/${failedId}`)).body.status).toBe('error');

        // The provider's fault is over: the same HCP (database and data folder) without it.
        await failing!.stop();
        healed = await HcpProcess.start({
          databaseUrl: failDb.url,
          dataDir: failing!.dataDir,
          env: { HCP_SIMULATOR_LATENCY_SCALE: '0.05' },
        });
        failing = undefined;
        target = healed;
        const again = await apply(dir);
        expect(again.stdout).toMatch(/1 added, 0 changed, 1 destroyed/);
        const newId = (await outputs(dir)).vm_id;
        expect(newId).not.toBe(failedId);
        const healedApi = failApi.asBase(healed.baseUrl);
        expect((await healedApi.get(`/v1/projects/${PROJECT}/vms/${newId}`)).body.status).toBe('running');
        expect((await healedApi.get(`/v1/projects/${PROJECT}/vms/${failedId}`)).body.status).toBe('deleted');
      },
      STEP_TIMEOUT,
    );
  });
});
