export * from './errors';
export * from './messaging-config';
export * from './message-envelope';
export * from './messaging-logger';
export * from './publisher';
export * from './kafka-publisher';
export * from './log-publisher';
export * from './create-publisher';
