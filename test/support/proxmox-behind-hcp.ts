import { ProxmoxDriver } from '@hcp/providers';

/**
 * A VM at Proxmox carrying `hcpId`, made by a driver of the test's own behind HCP's back: what a create
 * whose answer was lost, a cleanup that failed or a restored backup leaves there.
 */
export async function makeVmAtProxmox(driver: ProxmoxDriver, hcpId: string, powerOn: boolean): Promise<void> {
  await driver.createVm(
    {
      hcp_id: hcpId,
      project_id: 'acme',
      name: `left-${hcpId.slice(0, 8)}`,
      image_ref: 'debian-12',
      vcpus: 1,
      ram_mb: 512,
      disk_gb: 8,
      ssh_keys: [],
      tags: {},
      power_on: powerOn,
    },
    { deadline: new Date(Date.now() + 30_000), signal: new AbortController().signal },
  );
}
