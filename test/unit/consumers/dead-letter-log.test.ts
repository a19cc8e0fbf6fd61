import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import type { StageProcessor } from '../../../src/consumers/stage-runner.js';
import type { InMessage, StewardProducer } from '../../../src/adapters/kafka/client.js';
import { StewardError } from '../../../src/errors.js';
import { createLogger } from '../../../src/logger.js';
import { startedRunner } from './fixtures.js';

async function deadLetterLogLine(bindStage: boolean): Promise<{ line: string; record: Record<string, unknown> }> {
  let buf = '';
  const stream = new Writable({
    write(chunk, _enc, cb) {
      buf += String(chunk);
      cb();
    },
  });
  const root = createLogger({ level: 'info', destination: stream as never });
  const producer: StewardProducer = { send: async () => undefined, async disconnect() {} };
  const proc: StageProcessor = {
    stage: 'tripwire',
    inputTopics: ['in'],
    async process() {
      throw new StewardError('STEWARD_TRACE_SCHEMA', 'trace is missing agent_id');
    },
  };
  const { handle: handler } = await startedRunner(proc, { producer, logger: bindStage ? root.child({ stage: 'tripwire' }) : root, chunkSize: 10 });
  const m: InMessage = { topic: 'in', partition: 0, offset: '7', key: Buffer.from('a'), value: Buffer.from('{}'), headers: {}, timestampMs: 0 };
  await handler({ topic: 'in', partition: 0, highWatermark: '1', messages: [m] }, {
    resolveOffset: () => undefined,
    heartbeat: async () => undefined,
    isRunning: () => true,
    isStale: () => false,
    commit: async () => undefined,
  });
  const line = buf.split('\n').find((l) => l.includes('dead-lettered'))!;
  return { line, record: JSON.parse(line) as Record<string, unknown> };
}

const count = (s: string, key: string) => s.split(`"${key}":`).length - 1;

describe('dead-letter log record', () => {
  it.each([true, false])('one msg, one stage, the error text under err (stage bound by the child logger: %s)', async (bind) => {
    const { line, record } = await deadLetterLogLine(bind);
    expect(count(line, 'msg')).toBe(1);
    expect(count(line, 'stage')).toBe(1);
    expect(record).toMatchObject({ msg: 'dead-lettered', stage: 'tripwire', code: 'STEWARD_TRACE_SCHEMA', err: 'trace is missing agent_id', topic: 'in', partition: 0, offset: '7' });
  });
});
