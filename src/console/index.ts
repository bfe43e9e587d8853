// The console context as the application sees it.
export { ConsoleModule } from './console.module';
export { serveWebconsoleAssets } from './webconsole-assets';
