/**
 * The driver contract against real libvirt (qemu:///system) booting the real test guest. Unavailable is
 * a URI whose socket does not exist; a hang is a socket that accepts and never answers.
 */
import { randomUUID } from 'node:crypto';
import { LibvirtDriver, type ProviderDriver } from '@hcp/providers';
import {
  LIBVIRT_URI,
  describeWithLibvirt,
  ensureTestGuest,
  hangingLibvirt,
  removeTestVm,
  virshOrNull,
  virshOut,
} from '../../support/libvirt-guest';
import { describeDriverContract, type DriverContractHarness } from './driver-contract';

// Slow-ish: guests boot under TCG (5 s on an idle machine, 20-30 s on a busy one). The suite takes
// about 1-2.5 minutes; each step may take longer than the default 120 s on a loaded CI machine.
jest.setTimeout(300_000);

describeWithLibvirt('LibvirtDriver on real libvirt', () => {
  describeDriverContract('LibvirtDriver', async (): Promise<DriverContractHarness> => {
    const guest = await ensureTestGuest();
    const made = new Set<string>();
    const make = (uri = LIBVIRT_URI) =>
      new LibvirtDriver({
        uri,
        pool: guest.pool,
        provider_id: 'provider-libvirt-contract',
        cluster_id: 'cluster-libvirt-contract',
        // Long enough for the booted guest to power itself off; short enough that a press it missed
        // while still booting does not hold the suite up.
        shutdown_timeout_ms: 5_000,
      });
    let driver: ProviderDriver = make();
    let hang: Awaited<ReturnType<typeof hangingLibvirt>> | undefined;
    return {
      get driver() {
        return driver;
      },
      spec: (overrides = {}) => {
        const spec = {
          hcp_id: `vm-${randomUUID()}`,
          project_id: 'prj-contract',
          name: 'contract-vm',
          image_ref: guest.image_ref,
          vcpus: 1,
          ram_mb: 96,
          disk_gb: 1,
          ssh_keys: [],
          tags: {},
          power_on: true,
          ...overrides,
        };
        made.add(spec.hcp_id);
        return spec;
      },
      async injectUnavailable() {
        driver = make('qemu+unix:///system?socket=/nonexistent/libvirt-sock');
      },
      async injectHang() {
        hang ??= await hangingLibvirt();
        driver = make(hang.uri);
      },
      async clearFaults() {
        driver = make();
      },
      async countVms(hcpId) {
        const names = (await virshOut(['list', '--all', '--name'])).split('\n').filter(Boolean);
        let count = 0;
        for (const name of names) {
          const xml = await virshOrNull(['dumpxml', name]);
          if (xml?.includes(`<hcp:id>${hcpId}</hcp:id>`)) count++;
        }
        return count;
      },
      opTimeoutMs: 60_000,
      async close() {
        await hang?.close();
        for (const id of made) await removeTestVm(guest.pool, id);
      },
    };
  });
});
