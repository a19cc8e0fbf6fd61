export * from '../../../../src/engine/trust-debt/index.js';
export { INTERVENTIONS as INTERVENTION_ORDER } from '../../../../src/engine/types.js';
