// A private clickhouse-server (Debian package) on free loopback ports in a temp dir, so a test can stop and
// restart it without disturbing the shared server. Config mirrors scripts/services.sh.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

export class PrivateClickHouse {
  private proc?: ChildProcess;
  private constructor(
    readonly dir: string,
    readonly httpPort: number,
  ) {}

  get url(): string {
    return `http://127.0.0.1:${this.httpPort}`;
  }

  static async create(): Promise<PrivateClickHouse> {
    const dir = mkdtempSync(join(tmpdir(), 'steward-ch-'));
    const [http, tcp] = [await freePort(), await freePort()];
    for (const d of ['data', 'tmp', 'user_files', 'format_schemas', 'logs']) mkdirSync(join(dir, d), { recursive: true });
    writeFileSync(
      join(dir, 'config.xml'),
      `<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>${dir}/logs/server.log</log><errorlog>${dir}/logs/server.err.log</errorlog><size>10M</size><count>1</count></logger>
  <http_port>${http}</http_port><tcp_port>${tcp}</tcp_port><listen_host>127.0.0.1</listen_host>
  <max_connections>256</max_connections><keep_alive_timeout>3</keep_alive_timeout><max_concurrent_queries>50</max_concurrent_queries>
  <uncompressed_cache_size>67108864</uncompressed_cache_size><mark_cache_size>67108864</mark_cache_size>
  <path>${dir}/data/</path><tmp_path>${dir}/tmp/</tmp_path><user_files_path>${dir}/user_files/</user_files_path>
  <format_schema_path>${dir}/format_schemas/</format_schema_path><users_config>${dir}/users.xml</users_config>
  <default_profile>default</default_profile><default_database>default</default_database><timezone>UTC</timezone>
  <mlock_executable>false</mlock_executable>
</yandex>`,
    );
    writeFileSync(
      join(dir, 'users.xml'),
      `<?xml version="1.0"?>
<yandex>
  <profiles><default><max_memory_usage>1000000000</max_memory_usage></default></profiles>
  <users><default><password></password><networks><ip>127.0.0.1</ip><ip>::1</ip></networks><profile>default</profile><quota>default</quota></default></users>
  <quotas><default><interval><duration>3600</duration><queries>0</queries><errors>0</errors><result_rows>0</result_rows><read_rows>0</read_rows><execution_time>0</execution_time></interval></default></quotas>
</yandex>`,
    );
    return new PrivateClickHouse(dir, http);
  }

  async ping(): Promise<boolean> {
    try {
      const r = await fetch(`${this.url}/?query=SELECT%201`, { signal: AbortSignal.timeout(1000) });
      return (await r.text()).trim() === '1';
    } catch {
      return false;
    }
  }

  async start(timeoutMs = 60_000): Promise<void> {
    this.proc = spawn('clickhouse-server', [`--config-file=${join(this.dir, 'config.xml')}`], { cwd: this.dir, stdio: 'ignore' });
    const deadline = Date.now() + timeoutMs;
    while (!(await this.ping())) {
      if (this.proc.exitCode !== null) throw new Error(`private clickhouse-server exited with ${this.proc.exitCode} (logs in ${this.dir}/logs)`);
      if (Date.now() > deadline) throw new Error('private clickhouse-server did not answer in time');
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  /** SIGTERM (SIGKILL after 20 s), by this process's own child pid. */
  async stop(): Promise<void> {
    const p = this.proc;
    if (!p || p.exitCode !== null) return;
    const exited = new Promise<void>((r) => p.once('exit', () => r()));
    p.kill('SIGTERM');
    const t = setTimeout(() => p.kill('SIGKILL'), 20_000);
    await exited;
    clearTimeout(t);
  }

  async destroy(): Promise<void> {
    await this.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
