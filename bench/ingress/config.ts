// The settings bench:ingress runs its ingresses with (run.ts in process, ingress-child.ts as a process of its own).
import { buildConfig, type StewardConfig } from '../../src/config/steward-config.js';
import { benchProcessEnv } from '../sink/services-env.js';

export function benchIngressConfig(prefix: string, agentsFile: string): StewardConfig {
  return buildConfig(
    {
      topics: { prefix, partitions: 6, reply_partitions: 4 },
      consumer: { group_prefix: prefix },
      redis: { key_prefix: `${prefix}:` },
      limits: { max_event_time_skew_ms: null },
      observability: { enabled: false },
      blueprints: { agents: agentsFile, watch: false },
      http: { enabled: true, port: 0, limits: { rate_per_second: 1_000_000 } },
    },
    benchProcessEnv(),
  );
}
