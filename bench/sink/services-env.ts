// ClickHouse URL and Kafka brokers for the sink benches: the environment, else scripts/services.sh env.
import { execFileSync } from 'node:child_process';

export function servicesEnv(): { clickhouse: string; brokers: string[] } {
  let ch = process.env.CLICKHOUSE_URL;
  let kafka = process.env.KAFKA_BROKERS;
  if (!ch || !kafka) {
    const out = execFileSync('bash', ['scripts/services.sh', 'env'], { encoding: 'utf8' });
    ch ??= /CLICKHOUSE_URL=(\S+)/.exec(out)?.[1] ?? 'http://127.0.0.1:18123';
    kafka ??= /KAFKA_BROKERS=(\S+)/.exec(out)?.[1] ?? '127.0.0.1:19092';
  }
  return { clickhouse: ch, brokers: kafka.split(',') };
}

/** The process environment with the service URLs of scripts/services.sh added when KAFKA_BROKERS is not set. */
export function benchProcessEnv(): Record<string, string> {
  if (process.env.KAFKA_BROKERS) return process.env as Record<string, string>;
  const out = execFileSync('bash', ['scripts/services.sh', 'env'], { encoding: 'utf8' });
  const vars: Record<string, string> = {};
  for (const m of out.matchAll(/export (\w+)=(\S+)/g)) vars[m[1]] = m[2];
  return { ...process.env, ...vars } as Record<string, string>;
}
