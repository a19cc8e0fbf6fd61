/**
 * Rewrites the settings table of README.md (between `<!-- settings:begin -->` and `<!-- settings:end -->`)
 * from src/config/settings.ts. test/unit/config/settings-table.test.ts fails when they drift.
 * Run: npx tsx scripts/gen-settings-doc.ts
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { settingsMarkdown } from '../src/config/settings.js';

const readme = fileURLToPath(new URL('../README.md', import.meta.url));
const text = readFileSync(readme, 'utf8');
const re = /(<!-- settings:begin -->\n)[\s\S]*?(<!-- settings:end -->)/;
if (!re.test(text)) throw new Error('README.md has no settings:begin / settings:end markers');
writeFileSync(readme, text.replace(re, `$1${settingsMarkdown()}\n$2`));
