/**
 * A VM's console on Proxmox: vncproxy (a ticket, a port, a VNC password and a worker that waits 10 s
 * for us), then at once the vncwebsocket upgrade as the same identity, on the node whose worker
 * listens on that port (the node of vncproxy's task). The RFB server behind it asks for VNC
 * authentication with the `password` vncproxy answered; only a Proxmox that answers none (before PVE
 * 8.x generated passwords) gets the ticket instead, which PVE 9 accepts only through a compatibility
 * shortcut marked for removal. Ticket and password go into the returned console and nowhere else.
 */
import { conflict } from '@hcp/domain';
import type { CallContext, ProviderConsole } from '../spi/provider-driver';
import type { ProxmoxCluster } from './proxmox-cluster';
import { messageMatches } from './proxmox-errors';
import { parseUpid } from './proxmox-format';
import { badAnswer, powerOf } from './proxmox-translate';
import { ids, readVmStatus, requireVm } from './proxmox-vm-lookup';

export async function openVncConsole(
  cluster: ProxmoxCluster,
  hcpId: string,
  ctx: CallContext,
): Promise<ProviderConsole> {
  const loc = await requireVm(cluster, hcpId, ctx);
  const st = await readVmStatus(cluster, loc, ctx);
  if (st.status !== 'running') throw conflict(`VM ${hcpId} is not running`, { power_state: powerOf(st) });
  let data: Record<string, unknown> | null;
  try {
    data = await cluster.client.post<Record<string, unknown>>('/nodes/{node}/qemu/{vmid}/vncproxy', ids(loc), ctx, {
      params: { websocket: true },
    });
  } catch (err) {
    // Stopped between the status read and the call.
    if (messageMatches(err, /not running/i)) throw conflict(`VM ${hcpId} is not running`, { power_state: 'stopped' });
    throw err;
  }
  const port = Number(data?.port);
  if (!data || typeof data.ticket !== 'string' || !Number.isInteger(port)) throw badAnswer('vncproxy');
  const ticket = data.ticket;
  const password = typeof data.password === 'string' && data.password !== '' ? data.password : undefined;
  const node = (typeof data.upid === 'string' ? parseUpid(data.upid)?.node : undefined) ?? loc.node;
  const stream = await cluster.client.openWebSocket(
    '/nodes/{node}/qemu/{vmid}/vncwebsocket',
    { node, vmid: loc.vmid },
    { port, vncticket: ticket },
    ctx,
    {
      secrets: password ? [ticket, password] : [ticket],
    },
  );
  return { protocol: 'rfb', stream, rfb_password: password ?? ticket };
}
