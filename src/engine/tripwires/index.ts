// The tripwire stage (eval tier 0–1): tripwires first (halt short-circuits), then rule checks (stage.ts).
export { DEFAULT_TRIPWIRE_BUDGET_MS, checkTripwireTier, runTripwireStage, type TripwireStageOptions, type TripwireTierProblem } from './stage.js';
export { failClosedDecision, isDegraded, isDependencyFailure, REAL_TIMER, stageBudgetMs, type StageTimer } from './budget.js';
