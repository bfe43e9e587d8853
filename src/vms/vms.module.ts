import { Module, OnModuleInit } from '@nestjs/common';
import { CatalogModule } from '../catalog';
import { JobExecutors, JobQueue, JobRepository, JobsModule } from '../jobs';
import { OpsModule } from '../ops';
import { PeriodicTasks } from '../platform/background/periodic-tasks';
import { ProjectionHost, ProjectionsAdminModule } from '../projections-admin';
import { QuotasModule } from '../quotas';
import { CreateVmHandler } from './commands/create-vm.handler';
import { DeleteVmHandler } from './commands/delete-vm.handler';
import { RebootVmHandler } from './commands/reboot-vm.handler';
import { StartVmHandler } from './commands/start-vm.handler';
import { StopVmHandler } from './commands/stop-vm.handler';
import { UpdateVmLabelsHandler } from './commands/update-vm-labels.handler';
import { VmOperationRequester } from './commands/vm-operation-requester';
import { VmJobDispatcherProjection } from './jobs/vm-job-dispatcher.projection';
import { VmJobExecutor } from './jobs/vm-job.executor';
import { OpsVmsController } from './ops-vms.controller';
import { QuotaSweeper } from './quota-sweeper';
import { VmQueries } from './vm.queries';
import { VmRepository } from './vm.repository';
import { VmsController } from './vms.controller';

const QUOTA_SWEEP_MS = 5 * 60_000;

/**
 * VMs end to end: the tenant API, the commands that decide on a VM's stream and open its job, the
 * executor that runs `vm.*` jobs against the VM's provider, and the queries of the VM read model.
 */
@Module({
  imports: [JobsModule, QuotasModule, CatalogModule, OpsModule, ProjectionsAdminModule],
  controllers: [VmsController, OpsVmsController],
  providers: [
    VmRepository,
    VmQueries,
    VmOperationRequester,
    CreateVmHandler,
    StartVmHandler,
    StopVmHandler,
    RebootVmHandler,
    DeleteVmHandler,
    UpdateVmLabelsHandler,
    VmJobExecutor,
    QuotaSweeper,
  ],
  exports: [VmRepository],
})
export class VmsModule implements OnModuleInit {
  constructor(
    private readonly executor: VmJobExecutor,
    private readonly executors: JobExecutors,
    private readonly projections: ProjectionHost,
    private readonly jobs: JobRepository,
    private readonly queue: JobQueue,
    private readonly sweeper: QuotaSweeper,
    private readonly tasks: PeriodicTasks,
  ) {}

  onModuleInit(): void {
    this.executors.register('vm', this.executor);
    this.projections.registerProcessManager(new VmJobDispatcherProjection(this.jobs, this.queue));
    this.tasks.register({
      role: 'worker',
      name: 'quota sweep',
      intervalMs: QUOTA_SWEEP_MS,
      run: () => this.sweeper.sweep(),
    });
  }
}
