// dashboard.enabled: `steward run`'s process also serves the dashboard (loopback), read-only on its ClickHouse,
// and stops it with the rest.
import { describe, expect, it } from 'vitest';
import { ClickHouseStore } from '../../../src/adapters/clickhouse/client.js';
import { migrate } from '../../../src/adapters/clickhouse/migrations.js';
import { startStewardProcess } from '../../../src/process/steward-process.js';
import { quietLogger, withPipelineEnv } from '../pipeline/harness.js';
import { services, uniqueIdent } from '../setup/helpers.js';

describe('steward run with dashboard.enabled', () => {
  it('serves the dashboard beside the stages and closes it on stop', async () => {
    const database = uniqueIdent('steward_dash_run');
    const admin = new ClickHouseStore({ url: services().clickhouseUrl, database });
    await migrate(admin);
    try {
      await withPipelineEnv(
        'dash-run',
        async ({ cfg: base }) => {
          const cfg = { ...base, clickhouse: { ...base.clickhouse, url: services().clickhouseUrl, database } };
          expect(cfg.dashboard).toMatchObject({ enabled: true, host: '127.0.0.1', port: 0, refreshMs: 10_000 });
          const proc = await startStewardProcess(cfg, ['sink'], quietLogger());
          let port: number | undefined;
          try {
            port = proc.dashboardPort;
            expect(port).toBeGreaterThan(0);
            expect(await (await fetch(`http://127.0.0.1:${port}/api/health`)).json()).toEqual({ ok: true });
            const panels = (await (await fetch(`http://127.0.0.1:${port}/api/panels`)).json()) as { panels: { id: string; rows: unknown[] }[] };
            expect(panels.panels.find((p) => p.id === 'interventions-type')!.rows).toEqual([]);
          } finally {
            await proc.stop();
          }
          await expect(fetch(`http://127.0.0.1:${port}/api/health`)).rejects.toThrow();
        },
        { dashboard: { enabled: true, port: 0 } },
      );
    } finally {
      await admin.command(`DROP DATABASE IF EXISTS ${database}`);
      await admin.close();
    }
  }, 90_000);
});
