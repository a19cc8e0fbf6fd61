import { describe, expect, it } from 'vitest';
import { startPipeline } from '../../../src/process/pipeline.js';
import { buildConfig } from '../../../src/config/steward-config.js';
import { createLogger } from '../../../src/logger.js';

const logger = createLogger({ level: 'silent' });

describe('startPipeline startup failures', () => {
  it('a stage missing what it needs fails before anything is contacted or started (the sink neither)', async () => {
    // No broker is contacted: the scorer stage fails its own precondition (no engine) before the sink is started.
    const cfg = buildConfig({ kafka: { brokers: ['127.0.0.1:1'] } }, {});
    const events: string[] = [];
    const startSink = async () => {
      events.push('sink started');
      return { stop: async () => void events.push('sink stopped') };
    };
    const err = (await startPipeline(cfg, ['sink', 'scorer'], { startSink }, { logger }).catch((e: unknown) => e)) as Error;
    expect(err.message).toBe('stage scorer needs an engine');
    expect(events).toEqual([]);
  });
});
