// Debian's chromium driven by puppeteer-core (`.ci/run` installs it when missing). Screenshots go to
// test-output/dashboard/ (git-ignored; CI keeps the folder as an artifact).
import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import puppeteer, { type Browser } from 'puppeteer-core';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const SHOTS = fileURLToPath(new URL('../../../test-output/dashboard/', import.meta.url));

export async function launchChromium(): Promise<Browser> {
  mkdirSync(SHOTS, { recursive: true });
  return puppeteer.launch({ executablePath: CHROMIUM, headless: true, args: ['--headless=new', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
}
