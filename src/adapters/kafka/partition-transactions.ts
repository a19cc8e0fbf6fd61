/**
 * Exactly-once output for a stage (`consumer.exactly_once`): each chunk's outputs and its partition's offset
 * commit in one Kafka transaction, so read_committed readers (kafkajs' default, the trust-debt stage, the sink,
 * StewardClient) see every input's outputs once, even when the stage crashes or a partition moves mid-stream.
 * A redelivered input is recomputed, and an LLM judge need not answer the same twice: without this, the
 * verdict a crash left behind and its recomputation could both be read.
 *
 * Fencing is per input partition: its producer's transactional id is `<group>.<topic>.<partition>`, so the
 * member that takes a partition over aborts the previous owner's open transaction (a process killed
 * mid-commit) and makes its later commits fail (a member evicted but still running). kafkajs' TxnOffsetCommit
 * carries no group generation (KIP-447), hence one id per partition rather than per member. An evicted owner
 * may still commit between the new owner's offset fetch and its fencing: the new owner therefore reads the
 * committed offset again once it has fenced, and skips records below it (`claim`).
 */
import type { KafkaAdapter, OutRecord, StewardAdmin, TransactionalProducer } from './client.js';

interface Claim {
  ready: Promise<{ producer: TransactionalProducer; floor: bigint }>;
  /** The commit in flight, if any: a replaced producer is closed only after it settled. */
  inflight: Promise<unknown>;
}

export interface PartitionTransactionsOptions {
  adapter: Pick<KafkaAdapter, 'transactionalProducer' | 'admin'>;
  groupId: string;
  transactionTimeoutMs?: number;
}

export class PartitionTransactions {
  private readonly claims = new Map<string, Claim>();
  private admin?: Promise<StewardAdmin>;

  constructor(private readonly o: PartitionTransactionsOptions) {}

  /** The transactional id of one input partition's producer. */
  transactionalId(topic: string, partition: number): string {
    return `${this.o.groupId}.${topic}.${partition}`;
  }

  /**
   * Called before a partition's batch is processed: fences the partition's earlier owners (once per group
   * generation) and returns the group's committed offset as read after fencing (-1 when none). Records
   * below it were committed by an earlier owner and must not be processed again.
   */
  async claim(topic: string, partition: number): Promise<bigint> {
    const key = `${topic}/${partition}`;
    let c = this.claims.get(key);
    if (!c) {
      const claim: Claim = { ready: this.open(topic, partition), inflight: Promise.resolve() };
      this.claims.set(key, claim);
      claim.ready.catch(() => {
        if (this.claims.get(key) === claim) this.claims.delete(key);
      });
      c = claim;
    }
    return (await c.ready).floor;
  }

  /**
   * Sends `records` and commits `lastOffset` + 1 for the partition, atomically. A failure drops the
   * partition's producer (the next claim fences again and re-reads the committed offset: an ambiguous
   * failure may have committed after all).
   */
  async commit(topic: string, partition: number, records: OutRecord[], lastOffset: string): Promise<void> {
    const key = `${topic}/${partition}`;
    const c = this.claims.get(key);
    if (!c) throw new Error(`partition ${key} was not claimed in this generation`);
    const { producer } = await c.ready;
    const p = producer.commit(records, { groupId: this.o.groupId, topic, partition, nextOffset: (BigInt(lastOffset) + 1n).toString() });
    c.inflight = p.catch(() => undefined);
    try {
      await p;
    } catch (e) {
      this.drop(key, c);
      throw e;
    }
  }

  /**
   * A new group generation (kafkajs GROUP_JOIN, also after a consumer restart): every partition must be
   * claimed again, since another member may have owned it in between.
   */
  reassigned(): void {
    for (const [key, c] of [...this.claims]) this.drop(key, c);
  }

  async disconnect(): Promise<void> {
    const open = [...this.claims];
    this.claims.clear();
    await Promise.allSettled(open.map(([, c]) => this.close(c)));
    const admin = this.admin;
    this.admin = undefined;
    if (admin) await admin.then((a) => a.disconnect()).catch(() => undefined);
  }

  private drop(key: string, c: Claim): void {
    if (this.claims.get(key) === c) this.claims.delete(key);
    void this.close(c);
  }

  private async close(c: Claim): Promise<void> {
    const ready = await c.ready.catch(() => undefined);
    if (!ready) return;
    await c.inflight;
    await ready.producer.disconnect().catch(() => undefined);
  }

  private async open(topic: string, partition: number): Promise<{ producer: TransactionalProducer; floor: bigint }> {
    const producer = await this.o.adapter.transactionalProducer(this.transactionalId(topic, partition), this.o.transactionTimeoutMs);
    try {
      return { producer, floor: await this.committed(topic, partition) };
    } catch (e) {
      await producer.disconnect().catch(() => undefined);
      throw e;
    }
  }

  private async committed(topic: string, partition: number): Promise<bigint> {
    const admin = (this.admin ??= this.o.adapter.admin());
    try {
      const offsets = await (await admin).groupOffsets(this.o.groupId, topic);
      const o = offsets.find((x) => x.partition === partition);
      return o ? BigInt(o.offset) : -1n;
    } catch (e) {
      // A broken admin connection is replaced at the next claim.
      if (this.admin === admin) this.admin = undefined;
      void admin.then((a) => a.disconnect()).catch(() => undefined);
      throw e;
    }
  }
}
