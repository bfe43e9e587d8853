export * from './host-agent';
export * from './host-calls';
