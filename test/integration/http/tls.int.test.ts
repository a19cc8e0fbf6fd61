// #24 TLS: with http.tls.cert_file/key_file the ingress serves HTTPS only. A self-signed certificate made in the
// test (openssl, for 127.0.0.1): a real HTTPS request that trusts it is answered, one that does not is refused
// by its own TLS check, plain HTTP gets no answer, and the real acgp client (httpx, trusting the certificate
// through SSL_CERT_FILE) ingests a batch over HTTPS into acgp.traces. Real Kafka and Redis.
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { apiKeyHash } from '../../../src/adapters/http/ingress-auth.js';
import { startHttpIngress } from '../../../src/process/http-ingress.js';
import { Collector, pipelineConfig, quietLogger, withPipelineEnv } from '../pipeline/harness.js';
import { deleteRedisPrefix, redisClient, uniqueRedisPrefix, waitFor } from '../setup/helpers.js';

const PY = resolve('.venv-acgp/bin/python');

function get(url: string, ca?: string): Promise<{ status: number; body: string }> {
  return new Promise((ok, fail) => {
    const req = https.get(url, ca ? { ca } : {}, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => ok({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', fail);
  });
}

describe('HTTPS ingress (http.tls)', () => {
  it('serves HTTPS with the configured certificate; the real acgp client ingests over it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'steward-tls-'));
    const cert = join(dir, 'http.crt');
    const key = join(dir, 'http.key');
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'], { stdio: 'ignore' });
    writeFileSync(join(dir, 'agents.yaml'), `agents:\n  - id: tls-agent\n    api_keys: ["${apiKeyHash('tls-key')}"]\n`);
    const redisPrefix = uniqueRedisPrefix('tls');
    await withPipelineEnv('http-tls', async ({ cfg: base, topics, adapter }) => {
      const cfg = pipelineConfig(base.topics.prefix, {
        blueprints: { dir, agents: join(dir, 'agents.yaml'), watch: false },
        redis: { key_prefix: redisPrefix },
        http: { enabled: true, port: 0, tls: { cert_file: cert, key_file: key } },
      });
      const ing = await startHttpIngress(cfg, quietLogger());
      const out = await new Collector(adapter, [topics.traces]).start();
      try {
        const url = `https://127.0.0.1:${ing.port}`;
        const ca = readFileSync(cert, 'utf8');
        expect(await get(`${url}/v1/health`, ca)).toEqual({ status: 200, body: '{"status":"ok"}' });
        // A client that does not trust the self-signed certificate refuses the connection itself.
        await expect(get(`${url}/v1/health`)).rejects.toMatchObject({ code: 'DEPTH_ZERO_SELF_SIGNED_CERT' });
        // Plain HTTP on the HTTPS port is not served.
        await expect(fetch(`http://127.0.0.1:${ing.port}/v1/health`)).rejects.toThrow();

        expect(existsSync(PY), `${PY} missing: .ci/run creates it`).toBe(true);
        const env = { PATH: process.env.PATH ?? '', ACGP_ENDPOINT: url, ACGP_API_KEY: 'tls-key', ACGP_MAX_RETRIES: '0', ACGP_FAIL_SILENTLY: 'true', SSL_CERT_FILE: cert };
        const { stdout } = await promisify(execFile)(PY, [resolve('test/integration/http/acgp_agent.py'), '2'], { env, timeout: 60_000 });
        const result = JSON.parse(stdout.split('\n').find((l) => l.startsWith('{'))!) as { trace_ids: string[]; results: { success: boolean; events_sent: number }[] };
        expect(result.results).toEqual([expect.objectContaining({ success: true, events_sent: 2 })]);
        await waitFor(() => out.on(topics.traces).length >= 2, { timeoutMs: 20_000, message: 'traces over HTTPS' });
        expect(out.json<{ trace_id: string; agent_id: string }>(topics.traces).map((t) => [t.trace_id, t.agent_id]).sort()).toEqual(result.trace_ids.map((id) => [id, 'tls-agent']).sort());
      } finally {
        await out.stop();
        await ing.close();
        const redis = redisClient();
        await deleteRedisPrefix(redis, redisPrefix).catch(() => undefined);
        redis.disconnect();
      }
    });
  }, 90_000);
});
