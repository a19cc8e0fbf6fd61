import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { renderAuthoredTypes, renderEmbedded } from '../../../../scripts/gen-embedded.js';
import { BASELINE_YAML, BLUEPRINT_SCHEMA } from '../../../../src/engine/blueprint/embedded.js';

const root = new URL('../../../../', import.meta.url);

describe('embedded copies', () => {
  it('the built-in baseline is identical to blueprints/clarity.baseline@1.0.yaml', () => {
    expect(BASELINE_YAML).toBe(readFileSync(new URL('blueprints/clarity.baseline@1.0.yaml', root), 'utf8'));
  });
  it('the embedded schema equals schemas/blueprint.schema.json (regenerate: npx tsx scripts/gen-embedded.ts)', () => {
    expect(BLUEPRINT_SCHEMA).toEqual(JSON.parse(readFileSync(new URL('schemas/blueprint.schema.json', root), 'utf8')));
    expect(readFileSync(new URL('src/engine/blueprint/embedded.ts', root), 'utf8')).toBe(renderEmbedded());
  });
  it('the authored blueprint type is generated from schemas/blueprint.schema.json (regenerate: npx tsx scripts/gen-embedded.ts)', async () => {
    expect(readFileSync(new URL('src/engine/blueprint/authored.ts', root), 'utf8')).toBe(await renderAuthoredTypes());
  });
});
