#!/usr/bin/env node
/**
 * `steward` entry point. Each subcommand lives in src/cli/commands/<name>.ts and exports
 * `run(argv: string[]): Promise<number>` (the exit code) and `USAGE` (its usage text, every subcommand
 * included, starting with `usage: steward <name>`); it is loaded only when called.
 * `--help` or `-h` anywhere in a command's arguments (before a `--`) prints its USAGE and exits 0 before the
 * command parses anything (test/unit/cli/help.test.ts runs it for every command and subcommand).
 */
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { StewardError } from '../errors.js';
import { redactSecrets } from '../observability/redact.js';

/** Command name → one line of description. A command `x` is the module ./commands/x.ts. */
export const COMMANDS: Record<string, string> = {
  validate: 'Validate blueprint files: FILE:LINE:COL: CODE: message per problem',
  diff: 'Compare two blueprint versions and report the required semver bump',
  eval: 'Evaluate traces offline with the full engine (JSONL in, JSONL out)',
  test: 'Run blueprint unit tests (*.test.yaml)',
  calibrate: 'Calibrate scorer thresholds against a labelled dataset',
  verify: 'Verify the signature of a PVS-1 verdict',
  debt: 'Show an agent\'s trust debt or its history',
  review: 'Feed review outcomes and remediation decisions',
  migrate: 'Apply ClickHouse migrations',
  ledger: 'Verify the hash-chained memory ledger',
  report: 'Print analyst reports from ClickHouse',
  run: 'Run the stream stages',
  topics: 'Create the Kafka topics',
  dlq: 'List dead-lettered records, or replay them to their source topic',
  schemas: 'Register Avro schemas in the schema registry',
  demo: 'Run the end-to-end demo on real services',
  keys: 'Generate an Ed25519 key pair (signing key, verification key)',
  replay: 'Verify a replay bundle (PATH: CODE: message per problem) or export one from ClickHouse',
  rollout: 'Stage a blueprint rollout (set, status, rollback): shared in Redis, arm by agent id',
  shadow: 'Report the differences of a shadow blueprint set on live traffic (from ClickHouse)',
  dashboard: 'Serve the analyst dashboard: a live page over ClickHouse (read-only, loopback by default)',
  'compile-rules': 'Compile plain-language rules to tested DSL conditions or workflows (asks the LLM; writes the .rules.lock)',
  approve: 'Approve a pending tool call (a signed answer on acgp.approval-answers)',
  deny: 'Deny a pending tool call (a signed answer on acgp.approval-answers)',
};

/** What every command module exports. */
export interface CommandModule {
  run(argv: string[]): Promise<number>;
  USAGE?: string;
}

/** `--help` / `-h` anywhere in the arguments; after `--` they are operands, not options. */
export function wantsHelp(args: readonly string[]): boolean {
  for (const a of args) {
    if (a === '--') return false;
    if (a === '--help' || a === '-h') return true;
  }
  return false;
}

function usage(): string {
  const width = Math.max(...Object.keys(COMMANDS).map((k) => k.length));
  return ['usage: steward <command> [options]', '', ...Object.entries(COMMANDS).map(([k, v]) => `  ${k.padEnd(width)}  ${v}`)].join('\n');
}

export async function main(argv: string[]): Promise<number> {
  const [cmd, ...rest] = argv;
  if (!cmd || cmd === '--help' || cmd === '-h' || cmd === 'help') {
    process.stdout.write(usage() + '\n');
    return cmd ? 0 : 2;
  }
  if (!(cmd in COMMANDS)) {
    process.stderr.write(`steward: unknown command '${cmd}'\n${usage()}\n`);
    return 2;
  }
  const mod = (await import(/* @vite-ignore */ `./commands/${cmd}.js`)) as CommandModule;
  if (wantsHelp(rest)) {
    process.stdout.write((mod.USAGE ?? `usage: steward ${cmd} [options]\n  ${COMMANDS[cmd]}`) + '\n');
    return 0;
  }
  try {
    return await mod.run(rest);
  } catch (e) {
    // node:util parseArgs rejects unknown or malformed options with a TypeError: a usage error (exit 2), not a crash.
    const code = (e as { code?: unknown })?.code;
    if (typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS')) throw new StewardError('STEWARD_USAGE', `${(e as Error).message}${mod.USAGE ? `\n${mod.USAGE}` : ''}`);
    throw e;
  }
}

/** Runs `steward` with `argv` and sets the process's exit code. bin/steward.js calls it; so does this module when run directly. */
export function runCli(argv: string[] = process.argv.slice(2)): void {
  main(argv).then(
    (code) => {
      process.exitCode = code;
    },
    (err: unknown) => {
      const msg = err instanceof StewardError ? err.format() : err instanceof Error ? (err.stack ?? err.message) : String(err);
      const code = err instanceof StewardError && err.code === 'STEWARD_USAGE' ? 2 : 1;
      process.exitCode = code;
      // A failed command must end the process even when a client it opened (a kafkajs retry, a Redis
      // reconnect loop) still holds the event loop. The timer is unref'd: a clean process exits at once.
      process.stderr.write(`steward: ${redactSecrets(msg)}\n`);
      setTimeout(() => process.exit(code), 1000).unref();
    },
  );
}

/** True when this module is the program (`tsx src/cli/main.ts`, `node dist/cli/main.js`), not an import. */
function isEntryPoint(): boolean {
  const script = process.argv[1];
  if (!script) return false;
  try {
    return realpathSync(script) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (isEntryPoint()) runCli();
