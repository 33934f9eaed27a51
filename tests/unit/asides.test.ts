/**
 * The asides in content/ (`:::note[Title]` … `:::`): each has a title, since
 * Starlight tells a page's language by its own docs folder, which these pages
 * are not in, and would title an untitled Chinese aside in English; and each
 * is closed. tests/e2e/reader.spec.ts checks that the built pages draw them as
 * asides rather than as paragraphs of colons.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

function pages(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? pages(join(dir, e.name)) : e.name.endsWith('.md') ? [join(dir, e.name)] : [],
  );
}

const files = [...pages('content/en'), ...pages('content/zh-CN')];

describe('asides in content/', () => {
  it('there are asides in both languages (the e2e test counts them on the built pages)', () => {
    const count = (lang: string) =>
      files.filter((f) => f.includes(`/${lang}/`)).reduce((n, f) => n + (readFileSync(f, 'utf8').match(/^:::\w+/gm)?.length ?? 0), 0);
    expect(count('en')).toBeGreaterThanOrEqual(11);
    expect(count('zh-CN')).toBe(count('en'));
  });
  for (const f of files) {
    const text = readFileSync(f, 'utf8');
    const opens = [...text.matchAll(/^:::(\w+)(.*)$/gm)];
    if (!opens.length) continue;
    it(`${f}: every aside has a title and is closed`, () => {
      for (const m of opens) {
        expect(['note', 'tip', 'caution', 'danger'], `${f}: a known kind`).toContain(m[1]);
        expect(m[2], `${f}: ":::${m[1]}" has a [title]`).toMatch(/^\[[^\]]+\]\s*$/);
      }
      expect(text.match(/^:::\s*$/gm)?.length ?? 0, `${f}: as many ":::" closing lines as asides`).toBe(opens.length);
    });
  }
});
