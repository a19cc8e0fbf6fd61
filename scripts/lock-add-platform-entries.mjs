// The npm registry reachable from our machines serves only some platforms' @rollup/rollup-* packages, so
// `npm install` writes a lock without the others and `npm ci` then refuses it ("Missing: ... from lock
// file"). This adds a lock entry (version, os, cpu, libc; optional) for each missing one: npm ci skips
// them on other platforms as it would with a complete lock. Run after `npm install`:
//   node scripts/lock-add-platform-entries.mjs
import { readFileSync, writeFileSync } from 'node:fs';
import process from 'node:process';
const lockPath = process.argv[2] ?? 'package-lock.json';
const lock = JSON.parse(readFileSync(lockPath, 'utf8'));
const rollup = lock.packages['node_modules/rollup'];
let added = 0;
for (const [name, version] of Object.entries(rollup?.optionalDependencies ?? {})) {
  if (lock.packages['node_modules/' + name]) continue;
  const m = /rollup-(android|darwin|freebsd|linux|openbsd|openharmony|win32)-(arm64|arm|x64|ia32|loong64|ppc64|riscv64|s390x)(?:-(eabi|gnueabihf|musleabihf|gnu|musl|msvc))?$/.exec(name);
  if (!m) throw new Error(`cannot derive os/cpu from ${name}`);
  const entry = { version, cpu: [m[2]], dev: true, license: 'MIT', optional: true, os: [m[1]] };
  if (m[3] === 'gnu' || m[3] === 'gnueabihf') entry.libc = ['glibc'];
  if (m[3] === 'musl' || m[3] === 'musleabihf') entry.libc = ['musl'];
  lock.packages['node_modules/' + name] = entry;
  added++;
}
lock.packages = Object.fromEntries(Object.entries(lock.packages).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a.localeCompare(b))));
writeFileSync(lockPath, JSON.stringify(lock, null, 2) + '\n');
process.stdout.write(`added ${added} platform entr${added === 1 ? 'y' : 'ies'}\n`);
