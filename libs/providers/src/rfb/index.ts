export * from './rfb-error';
export * from './vnc-auth';
export * from './byte-reader';
export * from './duplex-pair';
export * from './rfb-handshake';
export * from './rfb-pixels';
export * from './rfb-server';
