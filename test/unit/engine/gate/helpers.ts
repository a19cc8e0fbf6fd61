/** Shared by the gate unit tests: one blueprint compiled on the built-in baseline, and a scripted judge. */
import { compileBlueprintSet } from '../../../../src/engine/blueprint/index.js';
import { defaultEngineConfig } from '../../../../src/engine/config.js';
import type { CompiledBlueprint, LlmClient, LlmRequest } from '../../../../src/engine/types.js';

/** A judge answer: JSON text, or a judge that never answers (until aborted). */
export type Answer = string | { hang: true };

export class ScriptedLlm implements LlmClient {
  queue: Answer[] = [];
  requests: LlmRequest[] = [];
  async complete(req: LlmRequest, signal?: AbortSignal) {
    this.requests.push(req);
    const a = this.queue.shift();
    if (a === undefined) throw new Error('test: no scripted judge answer left');
    if (typeof a !== 'string')
      return new Promise<never>((_, reject) => signal?.addEventListener('abort', () => reject(signal.reason), { once: true }));
    return { text: a, model: 'judge-test', latencyMs: 1 };
  }
}

export function compileOne(yaml: string): CompiledBlueprint {
  const res = compileBlueprintSet([{ file: 'gate-test.yaml', text: yaml }], { config: defaultEngineConfig() });
  if (!res.set) throw new Error(res.errors.map((e) => e.format()).join('\n'));
  const bp = res.set.blueprints.find((b) => b.id !== 'clarity.baseline@1.0');
  if (!bp) throw new Error('no blueprint compiled');
  return bp;
}

