// The console context as the application sees it.
export { ConsoleModule } from './console.module';
export { webconsoleAssets } from './webconsole-assets';
