export * from './principal';
export * from './dev-signing-key';
export * from './dev-token';
export * from './route-policies';
export * from './access-decision';
export * from './token-verifier';
export * from './bearer.strategy';
export * from './internal-route-policies';
