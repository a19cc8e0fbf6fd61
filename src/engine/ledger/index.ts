export * from './types.js';
export * from './crypto.js';
export * from './chain.js';
export * from './verify.js';
