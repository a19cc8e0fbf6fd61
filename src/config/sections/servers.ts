/** observability.*, http.*, dashboard.*: what the process listens on. */
import { StewardError } from '../../errors.js';
import { settingValue as v } from '../settings.js';
import type { Raw } from '../config-text.js';
import { settingPath, type SectionContext } from './context.js';

export interface ServersSection {
  observability: { enabled: boolean; host: string; port: number };
  /** http.*: the acgp client's HTTP ingress (docs/http.md); tls files resolved against the config file. */
  http: { enabled: boolean; host: string; port: number; tls?: { certFile: string; keyFile: string }; maxBodyBytes: number; maxBatchEvents: number; maxInFlightBytes: number; maxInFlightBytesPerKey?: number; maxStreamsPerKey: number; ratePerSecond: number; clientTimeoutMs: number; idempotency: HttpIdempotency };
  /** dashboard.*: the analyst dashboard inside `steward run` (docs/dashboard.md). */
  dashboard: { enabled: boolean; host: string; port: number; refreshMs: number; allowedHosts: string[] };
}

/** http.idempotency.*: the batch routes' per-event idempotency keys (docs/http.md "Idempotency"). */
export interface HttpIdempotency {
  windowSeconds: number;
  sendTimeoutMs: number;
  pendingWaitMs: number;
  pendingStaleMs: number;
  /** Claim acgp-form batches as groups (D48); false during a rolling upgrade from a version before groups. */
  groups: boolean;
  /** Where retried events are told apart: claims before producing (D39), or the tripwire stage's marks (D52). */
  dedupe: 'ingress' | 'pipeline';
}

function httpIdempotency(raw: Raw): HttpIdempotency {
  const o: HttpIdempotency = {
    windowSeconds: v(raw, 'http.idempotency.window_seconds'),
    sendTimeoutMs: v(raw, 'http.idempotency.send_timeout_ms'),
    pendingWaitMs: v(raw, 'http.idempotency.pending_wait_ms'),
    pendingStaleMs: v(raw, 'http.idempotency.pending_stale_ms'),
    groups: v(raw, 'http.idempotency.groups'),
    dedupe: v(raw, 'http.idempotency.dedupe'),
  };
  // A key whose send may still be acknowledged must not be claimable again: its events would be produced twice.
  if (o.pendingStaleMs <= o.sendTimeoutMs) {
    throw new StewardError('STEWARD_CONFIG', `http.idempotency.pending_stale_ms (${o.pendingStaleMs}) must exceed http.idempotency.send_timeout_ms (${o.sendTimeoutMs}): a key pending under a send still running would be claimed and produced again`);
  }
  return o;
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
      maxInFlightBytesPerKey: v(raw, 'http.limits.max_in_flight_bytes_per_key'),
      maxStreamsPerKey: v(raw, 'http.limits.max_streams_per_key'),
      ratePerSecond: v(raw, 'http.limits.rate_per_second'),
      clientTimeoutMs: v(raw, 'http.limits.client_timeout_ms'),
      idempotency: httpIdempotency(raw),
    },
    dashboard: { enabled: v(raw, 'dashboard.enabled'), host: v(raw, 'dashboard.host'), port: v(raw, 'dashboard.port'), refreshMs: v(raw, 'dashboard.refresh_ms'), allowedHosts: v(raw, 'dashboard.allowed_hosts') },
  };
}
