// Debian's chromium driven by puppeteer-core (`.ci/run` installs it when missing). Screenshots go to
// test-output/dashboard/ (git-ignored; CI keeps the folder as an artifact).
import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import puppeteer, { type Browser } from 'puppeteer-core';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const SHOTS = fileURLToPath(new URL('../../../test-output/dashboard/', import.meta.url));

export async function launchChromium(): Promise<Browser> {
  mkdirSync(SHOTS, { recursive: true });
  // A page that is not in front (the live-refresh test opens a second one) must keep its timers: Chromium
  // otherwise throttles a hidden page's setInterval. A hung DevTools call fails after 30 s with its name instead
  // of holding the test until vitest's timeout (puppeteer's default is 180 s).
  return puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    protocolTimeout: 30_000,
    args: ['--headless=new', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-background-timer-throttling', '--disable-renderer-backgrounding', '--disable-backgrounding-occluded-windows'],
  });
}
