import { describe, expect, it } from 'vitest';
import { ScorerProcessor } from '../../../src/consumers/scorer.js';
import { scoringJson } from '../../../src/consumers/scoring-message.js';
import { topicNames } from '../../../src/adapters/kafka/topics.js';
import { StewardMetrics } from '../../../src/observability/metrics.js';
import type { InMessage } from '../../../src/adapters/kafka/client.js';
import type { ScoredMarks, ScoringTurn } from '../../../src/adapters/redis/scored-marks.js';
import { blockedRecord, scoreRecord, shellTrace } from './fixtures.js';

const topics = topicNames('acgp');
const reply = { topic: topics.replies, partition: 1, correlation_id: 'req-2' };
const record = { ...blockedRecord({ nowMs: 1767225600000 }), eventId: 'ev-1' };
const msg = (withReply: boolean): InMessage => ({
  topic: topics.scoring,
  partition: 0,
  offset: '7',
  key: Buffer.from(shellTrace.agent_id),
  value: Buffer.from(scoringJson(JSON.stringify(shellTrace), 1767225600000, record, withReply ? reply : undefined)),
  headers: {},
  timestampMs: 0,
});

function scorer(turn: ScoringTurn | Error) {
  const asked: unknown[] = [];
  const unavailable: unknown[] = [];
  const marks: ScoredMarks = {
    turn: async (eventId, r, correlationId) => {
      asked.push({ eventId, offset: r.offset, correlationId });
      if (turn instanceof Error) throw turn;
      return turn;
    },
  };
  let scored = 0;
  const engine = { score: async () => (scored++, scoreRecord({ intervention: 'flag', stage: 'ctq', ctq: 0.7 })) };
  const metrics = new StewardMetrics();
  return { proc: new ScorerProcessor({ engine, topics, metrics, marks, onMarksUnavailable: (e) => unavailable.push(e) }), asked, unavailable, metrics, scored: () => scored };
}

describe('scorer stage and scored marks', () => {
  it('first: a verdict on acgp.verdicts and to the client', async () => {
    const s = scorer('first');
    const outs = await s.proc.process(msg(true));
    expect(outs.map((o) => o.topic)).toEqual([topics.verdicts, topics.replies]);
    expect(s.asked).toEqual([{ eventId: 'ev-1', offset: '7', correlationId: 'req-2' }]);
  });

  it('duplicate: nothing, not even scored', async () => {
    const s = scorer('duplicate');
    expect(await s.proc.process(msg(true))).toEqual([]);
    expect(s.scored()).toBe(0);
    expect((await s.metrics.duplicates.get()).values[0]?.value).toBe(1);
  });

  it('marks unreadable (Redis down): scored anyway, and said so', async () => {
    const s = scorer(new Error('redis down'));
    const outs = await s.proc.process(msg(true));
    expect(outs.map((o) => o.topic)).toEqual([topics.verdicts, topics.replies]);
    expect(s.unavailable).toHaveLength(1);
  });

  it('reply-only: its own client gets a verdict, acgp.verdicts no second one', async () => {
    const s = scorer('reply-only');
    const outs = await s.proc.process(msg(true));
    expect(outs.map((o) => o.topic)).toEqual([topics.replies]);
    expect(JSON.parse(String(outs[0].message.value)).intervention).toBe('flag');
    expect((await s.metrics.interventions.get()).values).toEqual([]);
  });
});
