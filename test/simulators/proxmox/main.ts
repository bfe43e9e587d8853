/**
 * Runs the Proxmox VE API simulator on its own, so a developer can register a "Proxmox" provider in a
 * local HCP:  node scripts/ts-run.js test/simulators/proxmox/main.ts
 *
 * Environment: PVE_SIM_HOST (127.0.0.1), PVE_SIM_PORT (8006; 0 picks a free port),
 * PVE_SIM_LATENCY_SCALE (1; 0 for instant tasks), PVE_SIM_PASSWORD (root@pam's password, random when
 * unset), PVE_SIM_DIR (where ca.pem is written; a temporary folder when unset).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { ProxmoxSimulator } from './proxmox-simulator';

async function main(): Promise<void> {
  const scale = Number(process.env.PVE_SIM_LATENCY_SCALE ?? '1');
  if (!Number.isFinite(scale) || scale < 0) throw new Error('PVE_SIM_LATENCY_SCALE must be a number >= 0');
  const password = process.env.PVE_SIM_PASSWORD ?? randomBytes(9).toString('base64url');
  const adminKey = randomBytes(12).toString('base64url');
  const sim = new ProxmoxSimulator({
    host: process.env.PVE_SIM_HOST ?? '127.0.0.1',
    port: Number(process.env.PVE_SIM_PORT ?? '8006'),
    latency: { scale },
    users: { 'root@pam': password },
    adminKey,
  });
  const { url, caPem, fingerprint256 } = await sim.start();
  const token = sim.createToken('hcp@pve', 'hcp');
  const dir = process.env.PVE_SIM_DIR ?? fs.mkdtempSync(path.join(os.tmpdir(), 'hcp-proxmox-sim-'));
  fs.mkdirSync(dir, { recursive: true });
  const caFile = path.join(dir, 'ca.pem');
  fs.writeFileSync(caFile, caPem);

  const provider = {
    name: 'proxmox-sim',
    type: 'proxmox',
    endpoint: url,
    credentials: { token_id: token.tokenId, token_secret: token.secret },
    tls: { fingerprint_sha256: fingerprint256 },
    settings: { storage: 'local-lvm', bridge: 'vmbr0', full_clone: true, shutdown_timeout_s: 30 },
  };
  const lines = [
    `Proxmox VE API simulator listening on ${url}/api2/json (latency scale ${scale})`,
    `  schema:       ${sim.schema.file}`,
    `  CA:           ${caFile}`,
    `  fingerprint:  ${fingerprint256}`,
    `  API token:    ${token.header}`,
    `  ticket login: root@pam / ${password}`,
    `  nodes pve1, pve2; storages local, local-lvm, ceph-vm (shared); templates 9000 "debian-12" (pve1), 9001 "ubuntu-24.04" (pve2)`,
    `  admin:        ${url}/_sim/state, /_sim/vms, /_sim/requests, POST /_sim/faults, DELETE /_sim/faults, POST /_sim/tokens`,
    `                (header X-Sim-Admin-Key: ${adminKey})`,
    '',
    'Provider registration body for POST /v1/ops/providers:',
    JSON.stringify(provider, null, 2),
    '',
    'Images map to templates by name or VMID, e.g. provider_refs: { "<cluster_id>": "debian-12" }.',
  ];
  process.stdout.write(`${lines.join('\n')}\n`);

  const shutdown = () => {
    void sim.stop().then(() => process.exit(0));
  };
  process.on('SIGINT', shutdown);
  process.on('SIGTERM', shutdown);
}

main().catch((err: unknown) => {
  process.stderr.write(`proxmox simulator failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
