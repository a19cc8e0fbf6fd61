import { afterEach, describe, expect, it } from 'vitest';
import { HttpIngress, OPENAPI_PATH } from '../../../../src/adapters/http/ingress-server.js';
import { buildConfig } from '../../../../src/config/steward-config.js';

let ingress: HttpIngress | undefined;
afterEach(async () => {
  await ingress?.close();
  ingress = undefined;
});

describe('HTTP ingress server (docs/http.md)', () => {
  it('listens on the configured address and serves /v1/health', async () => {
    ingress = new HttpIngress({ host: '127.0.0.1', port: 0, maxBodyBytes: 1 << 20 });
    await ingress.ready();
    const port = await ingress.listen();
    const res = await fetch(`http://127.0.0.1:${port}/v1/health`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: 'ok' });
  });

  it('serves an OpenAPI document generated from the route schemas, with the X-API-Key scheme', async () => {
    ingress = new HttpIngress({ host: '127.0.0.1', port: 0, maxBodyBytes: 1 << 20 });
    await ingress.ready();
    const res = await ingress.app.inject({ method: 'GET', url: OPENAPI_PATH });
    expect(res.statusCode).toBe(200);
    const doc = res.json();
    expect(doc.openapi).toBe('3.0.3');
    expect(doc.paths['/v1/health'].get.responses['200']).toBeDefined();
    expect(doc.components.securitySchemes.apiKey).toEqual({ type: 'apiKey', in: 'header', name: 'X-API-Key' });
    expect(doc.paths[OPENAPI_PATH]).toBeUndefined();
  });
});

describe('http.* settings', () => {
  it('is off by default and binds to loopback', () => {
    const cfg = buildConfig({}, {});
    expect(cfg.http).toMatchObject({ enabled: false, host: '127.0.0.1', port: 8080, tls: undefined });
  });

  it('reads the environment and resolves TLS files; one TLS file without the other is refused', () => {
    const cfg = buildConfig({}, { STEWARD_HTTP_ENABLED: 'true', STEWARD_HTTP_PORT: '9001', STEWARD_HTTP_TLS_CERT: 'c.pem', STEWARD_HTTP_TLS_KEY: 'k.pem' });
    expect(cfg.http.enabled).toBe(true);
    expect(cfg.http.port).toBe(9001);
    expect(cfg.http.tls?.certFile).toMatch(/\/c\.pem$/);
    expect(() => buildConfig({}, { STEWARD_HTTP_TLS_CERT: 'c.pem' })).toThrow(/cert_file.*key_file/);
  });
});
