/**
 * Shared contracts of the pure engine. Every stage (tripwire, scorer, trust debt, gate) and every edge
 * (consumers, CLI) speaks these types. Nothing here does I/O; clock, state and LLM come in through the
 * small interfaces of ports.ts. One file per domain; this one gathers them so importers name one module.
 */
export * from './intervention.js';
export * from './trace.js';
export * from './ports.js';
export * from './condition.js';
export * from './compiled-blueprint.js';
export * from './compiled-gate.js';
export * from './outcomes.js';
