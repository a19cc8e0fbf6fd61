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
import { isFenced } from './kafka-error.js';
import { StewardError } from '../../errors.js';
import type { Logger } from '../../logger.js';

/** Between two reads of the committed offset when claiming (see `committed`). */
const STABLE_READ_GAP_MS = 100;

interface Claim {
  ready: Promise<{ producer: TransactionalProducer; floor: bigint }>;
  /** The commit in flight, if any: a replaced producer is closed only after it settled. */
  inflight: Promise<unknown>;
}

export interface PartitionTransactionsOptions {
  adapter: Pick<KafkaAdapter, 'transactionalProducer' | 'admin'>;
  groupId: string;
  transactionTimeoutMs?: number;
  logger?: Logger;
}

export class PartitionTransactions {
  private readonly claims = new Map<string, Claim>();
  /**
   * Partitions whose producer was fenced: another member owns them now. Claiming one again would fence that
   * owner in turn (and the two would take turns wasting chunks), so it waits for the next group generation.
   */
  private readonly lost = new Set<string>();
  /** Producers being closed (dropped claims), awaited by disconnect(). */
  private readonly closing = new Set<Promise<void>>();
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
    if (this.lost.has(key)) {
      const e = new StewardError('STEWARD_KAFKA', `partition ${key}: its producer was fenced (another member claimed the partition, or the transaction timed out); rejoining the group`, { retryable: true });
      // kafkajs rejoins the group at once on this type (thrown from eachBatch); the join tells whether the
      // partition is still this member's, and clears `lost`. Any other error would be retried ~30 s first.
      (e as StewardError & { type: string }).type = 'REBALANCE_IN_PROGRESS';
      throw e;
    }
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
   * Sends `records` and commits `lastOffset` + 1 for the partition, atomically, under a claim whose committed
   * offset is at most `firstOffset` (the first input the records answer): the partition is claimed again if
   * needed, and a commit that another member already moved past this input is refused (retryable: the batch is
   * redone from the committed offset). A failure drops the partition's producer, whose sequence numbers may
   * be off (the next claim fences again and re-reads the committed offset: an ambiguous failure may have
   * committed after all); a fenced one marks the partition lost until the next generation.
   */
  async commit(topic: string, partition: number, records: OutRecord[], lastOffset: string, firstOffset: string): Promise<void> {
    const key = `${topic}/${partition}`;
    const floor = await this.claim(topic, partition);
    if (floor > BigInt(firstOffset)) {
      throw new StewardError('STEWARD_KAFKA', `partition ${key} is committed up to ${floor}, past input ${firstOffset} (by another member, or by this one's commit that failed ambiguously); redoing the batch from there`, { retryable: true });
    }
    const c = this.claims.get(key);
    // Dropped while the claim was awaited (a new generation): the batch is redone under the next claim.
    if (!c) throw new StewardError('STEWARD_KAFKA', `partition ${key}: claim dropped by a rebalance before the commit`, { retryable: true });
    const { producer } = await c.ready;
    const p = producer.commit(records, { groupId: this.o.groupId, topic, partition, nextOffset: (BigInt(lastOffset) + 1n).toString() });
    c.inflight = p.catch(() => undefined);
    try {
      await p;
    } catch (e) {
      this.drop(key, c);
      if (isFenced(e)) this.lost.add(key);
      throw e;
    }
  }

  /**
   * A new group generation (kafkajs GROUP_JOIN, also after a consumer restart): every partition must be
   * claimed again, since another member may have owned it in between.
   */
  reassigned(): void {
    this.lost.clear();
    for (const [key, c] of [...this.claims]) this.drop(key, c);
  }

  async disconnect(): Promise<void> {
    const open = [...this.claims];
    this.claims.clear();
    await Promise.allSettled([...open.map(([, c]) => this.close(c)), ...this.closing]);
    const admin = this.admin;
    this.admin = undefined;
    if (admin) await admin.then((a) => a.disconnect()).catch(() => undefined);
  }

  private drop(key: string, c: Claim): void {
    if (this.claims.get(key) === c) this.claims.delete(key);
    const closing = this.close(c);
    this.closing.add(closing);
    void closing.finally(() => this.closing.delete(closing));
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

  /**
   * The group's committed offset, read until two reads agree. The previous owner's last transaction is complete
   * once InitProducerId returned, but the group coordinator applies its offset commit asynchronously, and kafkajs'
   * OffsetFetch cannot ask for stable offsets only (require_stable, KIP-447).
   */
  private async committed(topic: string, partition: number): Promise<bigint> {
    const admin = (this.admin ??= this.o.adapter.admin());
    try {
      const read = async () => {
        const o = (await (await admin).groupOffsets(this.o.groupId, topic)).find((x) => x.partition === partition);
        return o ? BigInt(o.offset) : -1n;
      };
      let last = await read();
      for (let i = 0; i < 5; i++) {
        await new Promise((r) => setTimeout(r, STABLE_READ_GAP_MS));
        const again = await read();
        if (again === last) return last;
        last = again;
      }
      this.o.logger?.warn({ topic, partition, committed: last.toString() }, 'committed offset kept changing while claiming the partition; using the last read');
      return last;
    } catch (e) {
      // A broken admin connection is replaced at the next claim.
      if (this.admin === admin) this.admin = undefined;
      void admin.then((a) => a.disconnect()).catch(() => undefined);
      throw e;
    }
  }
}
