/**
 * Environment overrides of the config (the settings table's variables) and their validation: a problem with a
 * value that came from the environment names the variable, since it has no file position.
 */
import { StewardError, StewardAggregateError } from '../errors.js';
import { describeHidden, redactSecrets } from '../observability/redact.js';
import { SECRET_ENV, SETTING_LIST, parseEnvText } from './settings.js';
import { describe, jsonPath, parseConfigText, schemaValidator, type Raw } from './config-text.js';

/** An environment override: the variable and the config path (`/observability/port`) it sets. */
export interface EnvSource {
  name: string;
  value: string;
  path: string;
}

/** Applies every variable of the settings table that is set (empty counts as unset: docker-compose passes an unset ${VAR} as ""). */
export function envOverrides(raw: Raw, env: NodeJS.ProcessEnv): { raw: Raw; sources: EnvSource[] } {
  const out: Raw = structuredClone(raw);
  const sources: EnvSource[] = [];
  for (const st of SETTING_LIST) {
    const text = st.env ? env[st.env] : undefined;
    if (!st.env || !text) continue;
    const path = st.path.split('.');
    let o = out;
    for (const k of path.slice(0, -1)) o = o[k] = o[k] && typeof o[k] === 'object' ? o[k] : {};
    o[path[path.length - 1]] = parseEnvText(st.kind, text);
    sources.push({ name: st.env, value: text, path: '/' + path.join('/') });
  }
  return { raw: out, sources };
}

/** `NAME=value` for an error message: secrets hidden, URL passwords masked, long values cut. */
function envShown(s: EnvSource): string {
  if (SECRET_ENV.has(s.name)) return `${s.name} (${describeHidden(s.value)})`;
  const v = redactSecrets(s.value);
  return `${s.name}=${v.length > 120 ? `${v.slice(0, 120)}…` : v}`;
}

/**
 * Validates the config after environment overrides. A problem with a value that came from the
 * environment names the variable (`STEWARD_METRICS_PORT=abc: $.observability.port must be integer`);
 * there is no file position for it. Anything else is reported like a file problem.
 */
export function validateWithEnv(raw0: Raw, raw: Raw, sources: EnvSource[], file?: string): void {
  const v = schemaValidator();
  if (v(raw)) return;
  const envErrs: StewardError[] = [];
  let fileProblem = false;
  for (const e of (v.errors ?? []).filter((x) => x.keyword !== 'oneOf' && x.keyword !== 'if')) {
    const ip = e.keyword === 'additionalProperties' ? `${e.instancePath}/${(e.params as { additionalProperty: string }).additionalProperty}` : e.instancePath;
    // The variable that set this path (or a value inside it), or whose path lies in an object only the environment created.
    let from = sources.filter((s) => ip === s.path || ip.startsWith(`${s.path}/`));
    if (from.length === 0) {
      const parts = ip.split('/').slice(1);
      let inFile: unknown = raw0;
      for (const p of parts) inFile = inFile && typeof inFile === 'object' ? (inFile as Raw)[p] : undefined;
      if (inFile === undefined) from = sources.filter((s) => s.path.startsWith(`${ip}/`));
    }
    if (from.length === 0) {
      fileProblem = true;
      continue;
    }
    envErrs.push(new StewardError('STEWARD_CONFIG', `${from.map(envShown).join(', ')}: ${jsonPath(ip)} ${describe(e)}`));
  }
  // Problems not caused by a variable: reported with the file's positions, as before.
  if (fileProblem && envErrs.length === 0) parseConfigText(JSON.stringify(raw), file ? `${file} (+env)` : '(env)');
  if (envErrs.length > 0) throw envErrs.length === 1 ? envErrs[0] : new StewardAggregateError('STEWARD_CONFIG', envErrs);
}
