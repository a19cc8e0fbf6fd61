/**
 * `steward approve ID` / `steward deny ID` (docs/approvals.md "Answering"): an approver's signed answer to a
 * pending approval, published to acgp.approval-answers (key: the approval id; approvers' principals write only
 * there, spec-decisions D35). The approvals stage checks the
 * signature and the approver's role against the approver registry; the first answer (or the timeout) decides.
 * With --wait-ms the command waits for the outcome and prints it (exit 0 when the outcome is this answer's
 * decision, 1 when the approval was decided otherwise or no outcome came in time).
 */
import { createPrivateKey, sign } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { KafkaAdapter } from '../../adapters/kafka/client.js';
import { topicNames } from '../../adapters/kafka/topics.js';
import { waitForApprovalOutcome } from '../../client/approval-wait.js';
import { loadStewardConfig } from '../../config/steward-config.js';
import { approvalAnswerJson } from '../../contracts/approvals.js';
import { answerSigningText, type ApprovalAnswer, type ApprovalDecision } from '../../engine/approvals/approvers.js';
import { StewardError } from '../../errors.js';

export const USAGE = `usage: steward approve ID  (or: steward deny ID) --approver NAME --key FILE [--reason TEXT] [--wait-ms N] [--config steward.yaml] [--topic-prefix P]
  ID: the approval id of an escalated tool call (decision approval_id)
  --approver  your id in the approver registry (approvals.approvers_file)
  --key       your Ed25519 private key (PEM; steward keys generate), whose public key the registry lists
  --wait-ms   wait this long for the outcome and print it`;

/** An answer signed with `privateKeyPem` (exported for systems that answer programmatically). */
export function signedAnswer(a: Omit<ApprovalAnswer, 'signature'>, privateKeyPem: string): ApprovalAnswer {
  const key = createPrivateKey(privateKeyPem);
  return { ...a, signature: sign(null, Buffer.from(answerSigningText(a), 'utf8'), key).toString('base64') };
}

export async function answer(decision: ApprovalDecision, argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { approver: { type: 'string' }, key: { type: 'string' }, reason: { type: 'string' }, 'wait-ms': { type: 'string' }, config: { type: 'string' }, 'topic-prefix': { type: 'string' } },
  });
  if (positionals.length !== 1) throw new StewardError('STEWARD_USAGE', `one approval ID expected\n${USAGE}`);
  if (!values.approver || !values.key) throw new StewardError('STEWARD_USAGE', `--approver and --key are required (answers are signed)\n${USAGE}`);
  const waitMs = values['wait-ms'] === undefined ? undefined : Number(values['wait-ms']);
  if (waitMs !== undefined && (!Number.isInteger(waitMs) || waitMs <= 0)) throw new StewardError('STEWARD_USAGE', '--wait-ms must be a positive integer');
  const cfg = loadStewardConfig(values.config);
  const topics = topicNames(values['topic-prefix'] ?? cfg.topics.prefix);
  const id = positionals[0]!;
  const a = signedAnswer({ approval_id: id, decision, approver: values.approver, ...(values.reason && { reason: values.reason }), ts_ms: Date.now() }, readFileSync(values.key, 'utf8'));
  const adapter = new KafkaAdapter(cfg.kafka);
  const producer = await adapter.producer();
  try {
    await producer.send([{ topic: topics.approvalAnswers, messages: [{ key: id, value: approvalAnswerJson(a) }] }]);
  } finally {
    await producer.disconnect();
  }
  process.stdout.write(`${id}: ${decision} sent as ${values.approver}\n`);
  if (waitMs === undefined) return 0;
  const outcome = await waitForApprovalOutcome(adapter, topics.approvals, id, { timeoutMs: waitMs, sinceMs: a.ts_ms - 60_000 });
  if (!outcome) {
    process.stderr.write(`${id}: no outcome within ${waitMs} ms (is the approvals stage running?)\n`);
    return 1;
  }
  process.stdout.write(`${JSON.stringify({ approval_id: id, status: outcome.status, decision: outcome.decision, approver: outcome.approver, via: outcome.via })}\n`);
  return outcome.decision === decision && outcome.approver === values.approver ? 0 : 1;
}

export function run(argv: string[]): Promise<number> {
  return answer('approve', argv);
}
