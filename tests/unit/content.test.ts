/**
 * The documentation in content/: every page's front matter passes the site's
 * schema, every chapter cites kernel sources, names measured traces that
 * exist, links one and embeds a live widget, and the two languages keep the
 * same sections in the same order (the language switch relies on it).
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { load } from 'js-yaml';
import { describe, expect, it } from 'vitest';
import { pageFields } from '../../site/schema';

const dir = (lang: string) => `content/${lang}`;
const read = (lang: string, f: string) => readFileSync(`${dir(lang)}/${f}`, 'utf8');

function split(text: string): { front: Record<string, unknown>; body: string } {
  const m = /^---\n([\s\S]*?)\n---\n([\s\S]*)$/.exec(text);
  if (!m) throw new Error('no front matter');
  return { front: load(m[1]!) as Record<string, unknown>, body: m[2]! };
}

const chapters = readdirSync(dir('en'))
  .filter((f) => /^\d+-.+\.md$/.test(f))
  .sort();
const WIDGET = /<reuseport-(dispatch|lookup|bind|trace|traces|server)[\s>]/;

describe('content', () => {
  it('has the seventeen chapters of the guide, numbered without gaps', () => {
    expect(chapters.map((f) => Number(f.slice(0, 2)))).toEqual(Array.from({ length: 17 }, (_, i) => i + 1));
  });

  for (const lang of ['en', 'zh-CN']) {
    for (const f of readdirSync(dir(lang)).filter((x) => x.endsWith('.md'))) {
      it(`${lang}/${f}: front matter matches the schema`, () => {
        const { front } = split(read(lang, f));
        expect(typeof front.title, 'title').toBe('string');
        const r = pageFields.safeParse(front);
        expect(r.success, r.success ? '' : JSON.stringify(r.error.issues)).toBe(true);
      });
    }
    for (const f of chapters) {
      if (!existsSync(`${dir(lang)}/${f}`)) continue;
      it(`${lang}/${f}: cites kernel sources, names and links existing traces, embeds a widget, links relatively`, () => {
        const { front, body } = split(read(lang, f));
        const p = pageFields.parse(front);
        expect(p.sources.length, 'kernel sources in front matter').toBeGreaterThan(0);
        expect(p.traces.length, 'traces in front matter').toBeGreaterThan(0);
        for (const t of p.traces) expect(existsSync(`public/traces/${t}`), `public/traces/${t}`).toBe(true);
        expect(body, 'a live widget').toMatch(WIDGET);
        expect(body, 'a link to a measured trace').toMatch(/\]\(\.\.\/traces\/\?trace=[a-z0-9-]+\.json\)/);
        expect(body, 'internal links are relative (the site works under any base path)').not.toMatch(/\]\(\/(?!\/)/);
      });
    }
  }

  for (const f of chapters) {
    it(`zh-CN/${f} exists and has the same ## sections as the English page`, () => {
      expect(existsSync(`${dir('zh-CN')}/${f}`)).toBe(true);
      const h2 = (lang: string) =>
        split(read(lang, f))
          .body.split('\n')
          .filter((l) => /^## /.test(l)).length;
      expect(h2('zh-CN')).toBe(h2('en'));
    });
  }

  const scenarioPages = readdirSync(dir('en/scenarios'))
    .filter((f) => f.endsWith('.md'))
    .sort();
  for (const f of scenarioPages) {
    it(`scenarios/${f}: both languages, valid front matter, the same sections, and the scenario widget`, () => {
      for (const lang of ['en', 'zh-CN']) {
        expect(existsSync(`${dir(lang)}/scenarios/${f}`), `${lang}/scenarios/${f}`).toBe(true);
        const { front, body } = split(read(lang, `scenarios/${f}`));
        const r = pageFields.safeParse(front);
        expect(r.success, r.success ? '' : JSON.stringify(r.error.issues)).toBe(true);
        expect(body, 'the scenario widget').toMatch(/<reuseport-(scenario name="[a-z0-9-]+"|quic-reload)>/);
        expect(body, 'internal links are relative').not.toMatch(/\]\(\/(?!\/)/);
      }
      const h2 = (lang: string) =>
        split(read(lang, `scenarios/${f}`))
          .body.split('\n')
          .filter((l) => /^## /.test(l)).length;
      expect(h2('zh-CN')).toBe(h2('en'));
    });
  }

  it('the fork-vs-reuseport page cites the committed calibration: its extrapolated time ratios and the lock cost for 2.95, in both languages', () => {
    const cal = JSON.parse(readFileSync(new URL('../../public/traces/calibration.json', import.meta.url), 'utf8')) as {
      extrapolation: { cpus: number; timeRatio: number }[];
      lockUsForArticleRatio: number | null;
    };
    const ratios = cal.extrapolation.map((e) => e.timeRatio.toFixed(2));
    expect(cal.extrapolation.map((e) => e.cpus)).toEqual([2, 8, 16, 48]);
    for (const lang of ['en', 'zh-CN']) {
      const body = split(read(lang, 'scenarios/10-fork-vs-reuseport.md')).body.replace(/\s+/g, ' ');
      const cited = lang === 'en' ? `${ratios.slice(0, 3).join(', ')} and ${ratios[3]}` : `${ratios.slice(0, 3).join('、')} 和 ${ratios[3]}`;
      expect(body, `${lang}: the time ratios`).toContain(cited);
      expect(body, `${lang}: the lock cost`).toContain(`${cal.lockUsForArticleRatio} µs`);
    }
  });

  it('rejects a chapter whose release is not quoted text or whose trace is not a file name, naming the field', () => {
    const r = pageFields.safeParse({ sources: [{ file: 'net/core/sock_reuseport.c', release: 4.6 }], traces: ['../etc/passwd'] });
    expect(r.success).toBe(false);
    const paths = r.success ? [] : r.error.issues.map((i) => i.path.join('.'));
    expect(paths).toEqual(expect.arrayContaining(['sources.0.release', 'traces.0']));
  });
});
