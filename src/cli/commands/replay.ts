/**
 * `steward replay verify DIR [--keys FILE]` — re-checks a replay bundle offline (docs/acm.md): one
 * `PATH: CODE: message` line per problem and exit 1, nothing and exit 0 when the run reproduces.
 * Without --keys the keys named in bundle.json are trusted; with it only those (JSON {kid: PEM}, or
 * PEM public keys whose kid is their fingerprint).
 * `steward replay export --run ID --out DIR` — writes a run's bundle from a ReplaySource: ClickHouse's
 * (src/cli/replay-export.ts: records, run chains, the deployment's policy files and keys), or the one
 * `run(argv, {source})` is given.
 * Exit 2 on bad arguments.
 */
import { createPublicKey } from 'node:crypto';
import { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { dirname, join, relative, sep } from 'node:path';
import { exportReplayBundle, formatBundleProblem, verifyReplayBundle, type BundleFiles, type ReplaySource } from '../../engine/acm/index.js';
import { keyIdOf } from '../../engine/verdict/sign.js';

export const USAGE = `usage: steward replay verify DIR [--keys FILE]
       steward replay export --run ID --out DIR [--tenant T] [--blueprints DIR] [--agents FILE] [--keys FILE] [--config FILE] [--url URL] [--database DB]`;

export interface ReplayIo {
  out: (line: string) => void;
  err: (line: string) => void;
}

const stdio: ReplayIo = { out: (l) => process.stdout.write(l + '\n'), err: (l) => process.stderr.write(l + '\n') };

/** Every file under `dir`, keyed by its bundle path ('/' separators). */
export async function readBundleDir(dir: string): Promise<BundleFiles> {
  const files: BundleFiles = new Map();
  const walk = async (d: string): Promise<void> => {
    for (const e of await readdir(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) await walk(p);
      else if (e.isFile()) files.set(relative(dir, p).split(sep).join('/'), await readFile(p, 'utf8'));
    }
  };
  await walk(dir);
  return files;
}

export async function writeBundleDir(dir: string, files: BundleFiles): Promise<void> {
  for (const [path, text] of files) {
    const target = join(dir, path);
    await mkdir(dirname(target), { recursive: true });
    await writeFile(target, text);
  }
}

/** `--keys FILE`: JSON {kid: PEM} or one or more PEM public keys. */
export function parseKeysFile(text: string): Record<string, string> {
  const t = text.trim();
  if (t.startsWith('{')) return JSON.parse(t) as Record<string, string>;
  const pems = t.match(/-----BEGIN PUBLIC KEY-----[\s\S]*?-----END PUBLIC KEY-----/g) ?? [];
  if (pems.length === 0) throw new Error('no PEM public key and not a JSON {kid: PEM} object');
  return Object.fromEntries(pems.map((p) => [keyIdOf(createPublicKey(p)), p]));
}

export async function runReplayVerify(dir: string, keysFile: string | undefined, io: ReplayIo = stdio): Promise<number> {
  try {
    if (!(await stat(dir)).isDirectory()) throw new Error('not a directory');
  } catch (e) {
    io.err(`steward replay verify: cannot read ${dir}: ${(e as Error).message}`);
    return 2;
  }
  let keys: Record<string, string> | undefined;
  if (keysFile) {
    try {
      keys = parseKeysFile(await readFile(keysFile, 'utf8'));
    } catch (e) {
      io.err(`steward replay verify: bad --keys ${keysFile}: ${(e as Error).message}`);
      return 2;
    }
  }
  const problems = await verifyReplayBundle(await readBundleDir(dir), { keys });
  for (const p of problems) io.out(formatBundleProblem(p));
  return problems.length > 0 ? 1 : 0;
}

export async function runReplayExport(runId: string, out: string, source: ReplaySource, io: ReplayIo = stdio): Promise<number> {
  const files = await exportReplayBundle(source, runId);
  if (!files) {
    io.err(`steward replay export: unknown run ${runId}`);
    return 1;
  }
  await writeBundleDir(out, files);
  io.err(`steward replay export: ${files.size} file(s) written to ${out}`);
  return 0;
}

function flag(argv: string[], name: string): string | undefined {
  const i = argv.findIndex((a) => a === name || a.startsWith(`${name}=`));
  if (i < 0) return undefined;
  return argv[i]!.includes('=') ? argv[i]!.slice(name.length + 1) : argv[i + 1];
}

export async function run(argv: string[], deps: { source?: () => Promise<ReplaySource>; io?: ReplayIo } = {}): Promise<number> {
  const io = deps.io ?? stdio;
  const [sub, ...rest] = argv;
  if (sub === undefined || sub === '--help' || sub === '-h') {
    (sub ? io.out : io.err)(USAGE);
    return sub ? 0 : 2;
  }
  if (sub === 'verify') {
    const keys = flag(rest, '--keys');
    const positional = rest.filter((a, i) => !a.startsWith('--') && rest[i - 1] !== '--keys');
    const unknown = rest.find((a) => a.startsWith('--') && !a.startsWith('--keys'));
    if (unknown || positional.length !== 1 || (rest.includes('--keys') && keys === undefined)) {
      io.err(`steward replay verify: ${unknown ? `unknown option '${unknown}'` : 'one bundle directory is required'}\n${USAGE}`);
      return 2;
    }
    return runReplayVerify(positional[0]!, keys, io);
  }
  if (sub === 'export') {
    const runId = flag(rest, '--run');
    const out = flag(rest, '--out');
    const known = ['--run', '--out', '--tenant', '--blueprints', '--agents', '--keys', '--config', '--url', '--database'];
    const unknown = rest.find((a) => a.startsWith('--') && !known.includes(a.split('=')[0]!));
    if (!runId || !out || unknown) {
      io.err(`steward replay export: ${unknown ? `unknown option '${unknown}'` : '--run ID and --out DIR are required'}\n${USAGE}`);
      return 2;
    }
    if (deps.source) return runReplayExport(runId, out, await deps.source(), io);
    let keys: Record<string, string> | undefined;
    const keysFile = flag(rest, '--keys');
    try {
      if (keysFile) keys = parseKeysFile(await readFile(keysFile, 'utf8'));
    } catch (e) {
      io.err(`steward replay export: bad --keys ${keysFile}: ${(e as Error).message}`);
      return 2;
    }
    // From ClickHouse (the configured database): the run's records, its own chains, the deployment's policy files.
    const { clickhouseReplaySource } = await import('../replay-export.js');
    let ch: Awaited<ReturnType<typeof clickhouseReplaySource>>;
    try {
      ch = await clickhouseReplaySource({ config: flag(rest, '--config'), url: flag(rest, '--url'), database: flag(rest, '--database'), tenant: flag(rest, '--tenant'), blueprints: flag(rest, '--blueprints'), agents: flag(rest, '--agents'), keys });
    } catch (e) {
      // Configuration (keys, policy files): the caller's to fix.
      io.err(`steward replay export: ${e instanceof Error ? e.message : String(e)}`);
      return 2;
    }
    try {
      return await runReplayExport(runId, out, ch.source, io);
    } finally {
      await ch.close();
    }
  }
  io.err(`steward replay: unknown subcommand '${sub}'\n${USAGE}`);
  return 2;
}
