// npm's postinstall of this package: applies patches/ (patch-package) to node_modules — today one kafkajs fix
// (patches/kafkajs+2.2.4.patch: a send's messages grouped per partition in O(n) instead of O(n²); docs/pipeline.md
// "kafkajs patch"). Where patch-package is not installed (this package installed as a dependency of another
// project, or `npm ci --omit=dev`) the install goes on unpatched, with a warning: kafkajs still works, slower.
import { spawnSync } from 'node:child_process';
/* global console, process, URL */
import { createRequire } from 'node:module';
import { existsSync } from 'node:fs';

const require = createRequire(import.meta.url);
let bin;
try {
  bin = require.resolve('patch-package/index.js');
} catch {
  bin = undefined;
}
if (!existsSync(new URL('../patches', import.meta.url)) || !bin) {
  console.warn('acgp-steward: patch-package not installed, node_modules/kafkajs left unpatched (docs/pipeline.md "kafkajs patch")');
} else {
  const r = spawnSync(process.execPath, [bin, '--error-on-fail'], { stdio: 'inherit' });
  process.exit(r.status ?? 1);
}
