import { Module, OnModuleInit } from '@nestjs/common';
import { PeriodicTasks } from '../platform/background/periodic-tasks';
import { OpsModule } from '../ops';
import { VmsModule } from '../vms';
import { ConsoleConnector } from './console-connector';
import { ConsoleGateway } from './console-gateway';
import { CONSOLE_HOLD_RENEW_MS, ConsoleSessionHolds } from './console-session-holds';
import { CONSOLE_SWEEP_MS, ConsoleSessionSweeper } from './console-session-sweeper';
import { ConsoleSessionRepository } from './console-session.repository';
import { ConsoleSessionsController } from './console-sessions.controller';
import { OpenConsoleSessionHandler } from './open-console-session.handler';
import { WebconsoleController } from './webconsole.controller';

/**
 * Console sessions of running VMs: opened through the API with a single-use token, served by HCP's own
 * websocket proxy in front of the provider's console, and the webconsole page.
 */
@Module({
  imports: [VmsModule, OpsModule],
  controllers: [ConsoleSessionsController, WebconsoleController],
  providers: [
    ConsoleSessionRepository,
    ConsoleSessionHolds,
    ConsoleSessionSweeper,
    ConsoleConnector,
    ConsoleGateway,
    OpenConsoleSessionHandler,
  ],
})
export class ConsoleModule implements OnModuleInit {
  constructor(
    private readonly tasks: PeriodicTasks,
    private readonly gateway: ConsoleGateway,
    private readonly sweeper: ConsoleSessionSweeper,
  ) {}

  /** Consoles are relayed by API instances: they renew their holds and close those of dead ones. */
  onModuleInit(): void {
    this.tasks.register({
      role: 'api',
      name: 'console hold renewal',
      intervalMs: CONSOLE_HOLD_RENEW_MS,
      run: () => this.gateway.renewHolds(),
    });
    this.tasks.register({
      role: 'api',
      name: 'console sweep',
      intervalMs: CONSOLE_SWEEP_MS,
      run: () => this.sweeper.sweep(),
    });
  }
}
