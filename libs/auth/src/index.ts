export * from './principal';
export * from './dev-signing-key';
export * from './dev-token';
export * from './verification-keys';
export * from './jwt.strategy';
export * from './access-policy';
export * from './hcp-auth.guard';
