/** observability.*, http.*, dashboard.*: what the process listens on. */
import { StewardError } from '../../errors.js';
import { settingValue as v } from '../settings.js';
import type { Raw } from '../config-text.js';
import { settingPath, type SectionContext } from './context.js';

export interface ServersSection {
  observability: { enabled: boolean; host: string; port: number };
  /** http.*: the acgp client's HTTP ingress (docs/http.md); tls files resolved against the config file. */
  http: { enabled: boolean; host: string; port: number; tls?: { certFile: string; keyFile: string }; maxBodyBytes: number; maxBatchEvents: number; maxInFlightBytes: number; ratePerSecond: number; clientTimeoutMs: number };
  /** dashboard.*: the analyst dashboard inside `steward run` (docs/dashboard.md). */
  dashboard: { enabled: boolean; host: string; port: number; refreshMs: number; allowedHosts: string[] };
}

function httpTls(raw: Raw, ctx: SectionContext): ServersSection['http']['tls'] {
  const cert = v(raw, 'http.tls.cert_file');
  const key = v(raw, 'http.tls.key_file');
  if (cert === undefined && key === undefined) return undefined;
  if (cert === undefined || key === undefined) throw new StewardError('STEWARD_CONFIG', 'http.tls needs both cert_file (STEWARD_HTTP_TLS_CERT) and key_file (STEWARD_HTTP_TLS_KEY)');
  return { certFile: settingPath(ctx, 'STEWARD_HTTP_TLS_CERT', cert), keyFile: settingPath(ctx, 'STEWARD_HTTP_TLS_KEY', key) };
}

export function serversSection(raw: Raw, ctx: SectionContext): ServersSection {
  return {
    observability: { enabled: v(raw, 'observability.enabled'), host: v(raw, 'observability.host'), port: v(raw, 'observability.port') },
    http: {
      enabled: v(raw, 'http.enabled'),
      host: v(raw, 'http.host'),
      port: v(raw, 'http.port'),
      tls: httpTls(raw, ctx),
      maxBodyBytes: v(raw, 'http.limits.max_body_bytes'),
      maxBatchEvents: v(raw, 'http.limits.max_batch_events'),
      maxInFlightBytes: v(raw, 'http.limits.max_in_flight_bytes'),
      ratePerSecond: v(raw, 'http.limits.rate_per_second'),
      clientTimeoutMs: v(raw, 'http.limits.client_timeout_ms'),
    },
    dashboard: { enabled: v(raw, 'dashboard.enabled'), host: v(raw, 'dashboard.host'), port: v(raw, 'dashboard.port'), refreshMs: v(raw, 'dashboard.refresh_ms'), allowedHosts: v(raw, 'dashboard.allowed_hosts') },
  };
}
