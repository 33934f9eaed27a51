/**
 * The trace viewer says what each curated recording shows from the catalogue
 * (ui.trace.shows.<file>), in both languages. The English sentence is also
 * the manifest's own (public/traces/manifest.json, written with the
 * recording); the two must not drift apart.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { TABLES } from '../../src/model/messages';
import { TRACE_TEXT } from '../../src/islands/trace-text';

const entries = (JSON.parse(readFileSync('public/traces/manifest.json', 'utf8')) as { traces: { file: string; shows: string }[] }).traces;
const said = Object.keys(TABLES.en)
  .filter((k) => k.startsWith('ui.trace.shows.'))
  .map((k) => k.slice('ui.trace.shows.'.length));

describe('what a curated recording shows', () => {
  it('names only recordings the manifest lists', () => {
    expect(said.length).toBeGreaterThan(0);
    for (const f of said) expect(entries.map((e) => e.file)).toContain(f);
  });

  for (const e of entries.filter((x) => said.includes(x.file))) {
    it(`${e.file}: the English sentence is the manifest's, the Chinese one is Chinese`, () => {
      expect(TRACE_TEXT.en.shows(e)).toBe(e.shows);
      expect(TRACE_TEXT.zh.shows(e)).toMatch(/\p{Script=Han}/u);
    });
  }
});
