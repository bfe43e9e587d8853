// The metering context as the application sees it.
export { MeteringModule } from './metering.module';
