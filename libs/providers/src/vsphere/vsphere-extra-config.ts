/** extraConfig keys written onto a VM with one ReconfigVM_Task (a key set to "" is deleted). */
import type { CallContext } from '../spi/provider-driver';
import { moref } from './soap-envelope';
import type { VsphereClient } from './vsphere-client';
import { optionValues } from './vsphere-tags';
import { DEFAULT_TASK_TIMING, type TaskTiming, runTask } from './vsphere-tasks';

export async function writeExtraConfig(
  client: VsphereClient,
  vmMoref: string,
  options: Record<string, string>,
  ctx: CallContext,
  timing: TaskTiming = DEFAULT_TASK_TIMING,
): Promise<void> {
  if (Object.keys(options).length === 0) return;
  await runTask(
    client,
    'ReconfigVM_Task',
    moref('VirtualMachine', vmMoref),
    { spec: { extraConfig: optionValues(options) } },
    timing,
    ctx,
  );
}
