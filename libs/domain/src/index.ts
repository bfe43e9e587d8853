export * from './errors';
export * from './events/domain-event';
export * from './events/upcasters';
export * from './vm/vm.events';
export * from './vm/vm.state-machine';
export * from './job/job.events';
export * from './job/job.state-machine';
export * from './job/job-of-request';
