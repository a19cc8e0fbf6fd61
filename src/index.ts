export * from './errors.js';
export * from './engine/types.js';
export * from './engine/config.js';
