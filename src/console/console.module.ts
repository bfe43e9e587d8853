import { Module } from '@nestjs/common';
import { OpsModule } from '../ops';
import { VmsModule } from '../vms';
import { ConsoleConnector } from './console-connector';
import { ConsoleGateway } from './console-gateway';
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
  providers: [ConsoleSessionRepository, ConsoleConnector, ConsoleGateway, OpenConsoleSessionHandler],
})
export class ConsoleModule {}
