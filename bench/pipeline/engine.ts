// Engine used by the pipeline bench. Until the real StewardEngine wiring is available this is a
// constant-time stand-in, reported as engine=stub in the output so results are never mistaken.
import type { StewardConfig } from '../../src/config/steward-config.js';
import type { PipelineDeps } from '../../src/consumers/common-runtime.js';

export async function benchEngineDeps(_cfg: StewardConfig): Promise<{ deps: PipelineDeps; engineName: string; close(): Promise<void> }> {
  const engine = {
    async decide() {
      return { tenant: 'bench', blueprint: 'stub@1', intervention: 'ok', stage: 'none', halted: false, reasons: [], tripwires: [], rules: [], latencyMs: 0 };
    },
    async score(_t: unknown, d: { intervention: string }) {
      return { intervention: d.intervention, ctq: 1, risk: 0, metrics: [] };
    },
  };
  return { deps: { engine }, engineName: 'stub', close: async () => undefined };
}
