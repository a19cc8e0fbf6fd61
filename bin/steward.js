#!/usr/bin/env node
// Prefer the compiled CLI; fall back to running the TypeScript sources through tsx in a checkout.
import { existsSync } from 'node:fs';
import process from 'node:process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { dirname, join } from 'node:path';
const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const compiled = join(root, 'dist', 'cli', 'main.js');
// main.ts runs itself only when it is the program; imported from here, it is started explicitly.
let cli;
if (existsSync(compiled)) {
  cli = await import(pathToFileURL(compiled).href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  cli = await import(pathToFileURL(join(root, 'src', 'cli', 'main.ts')).href);
}
cli.runCli(process.argv.slice(2));
