/**
 * Context packets (ACM §9–10): schema, snapshot rule, content address and a monotonic version per
 * context id. The registry state is plain JSON passed in and returned (the stream keeps it per tenant,
 * `steward eval` in memory); every version is immutable and content-addressed.
 */
import { contentAddress } from './canonical.js';
import type { AcmProblem } from './problems.js';
import { schemaProblems } from './validate.js';

export interface ContextPacket {
  id: string;
  sources: string[];
  facts: Record<string, unknown>;
  assumptions?: string[];
  constraints_inherited?: Record<string, unknown>;
  provenance?: Record<string, unknown>;
  [k: string]: unknown;
}

/** One stored version: what a plan binds to and what the replay bundle's context/ holds. */
export interface ContextVersion {
  id: string;
  /** 1, 2, 3… per context id, in arrival order. */
  version: number;
  /** `sha256:<hex>` over the RFC 8785 canonical JSON of the packet. */
  digest: string;
  packet: ContextPacket;
  /** Trace that carried it, and its event time. */
  trace_id?: string;
  ts_ms?: number;
}

/** Newest version per context id (older versions live in the store the adapter writes to). */
export interface ContextState {
  contexts: Record<string, ContextVersion>;
}

export function emptyContextState(): ContextState {
  return { contexts: {} };
}

// A content digest, or a URI that names an immutable snapshot (docs/spec-decisions.md, ACM run governance).
const DIGEST_RE = /^(?:sha256|sha384|sha512|sha3-256|blake2b|blake3):[0-9a-fA-F]{32,}$/;
const SNAP_SCHEME_RE = /^(?:[a-z][a-z0-9+.-]*-)?snap(?:shot)?:\/\/\S+$/i;
const PINNED_RE = /[@#](?:sha256|sha512)[:=][0-9a-fA-F]{64,128}(?:$|[?#])/;

/** True when `source` names immutable content: a digest, a `*-snap://` snapshot id, or a digest-pinned URI. */
export function isSnapshotSource(source: string): boolean {
  return DIGEST_RE.test(source) || SNAP_SCHEME_RE.test(source) || PINNED_RE.test(source);
}

/** Schema and snapshot-rule problems of a packet (paths under `prefix`, e.g. `$.context`). */
export function contextPacketProblems(packet: unknown, prefix = '$'): AcmProblem[] {
  const problems = schemaProblems('context-packet', packet, prefix);
  if (problems.length > 0) return problems;
  const p = packet as ContextPacket;
  p.sources.forEach((s, i) => {
    if (!isSnapshotSource(s)) {
      problems.push({
        code: 'STEWARD_ACM_SNAPSHOT',
        message: `source '${s}' is a live, mutable source; planning needs a snapshot (a content digest such as sha256:<hex>, a snapshot URI such as kb-snap://…, or a URI pinned with @sha256:<hex>)`,
        path: `${prefix}.sources[${i}]`,
      });
    }
  });
  return problems;
}

/**
 * Records a valid packet: the same content as the newest version is that version again (a
 * redelivery); other content becomes the next version. Returns the new state and the version.
 */
export function recordContextPacket(state: ContextState, packet: ContextPacket, at: { trace_id?: string; ts_ms?: number } = {}): { state: ContextState; version: ContextVersion; created: boolean } {
  const digest = contentAddress(packet);
  const head = state.contexts[packet.id];
  if (head && head.digest === digest) return { state, version: head, created: false };
  const version: ContextVersion = { id: packet.id, version: (head?.version ?? 0) + 1, digest, packet, ...at };
  return { state: { contexts: { ...state.contexts, [packet.id]: version } }, version, created: true };
}

/** The version a plan's contextRef binds to: the newest one when the plan arrives (docs/spec-decisions.md). */
export function bindContext(state: ContextState, contextRef: string): ContextVersion | undefined {
  return Object.prototype.hasOwnProperty.call(state.contexts, contextRef) ? state.contexts[contextRef] : undefined;
}
