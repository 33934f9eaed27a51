/**
 * The fidelity chapter's tables of booted kernels state the figures of the
 * verification record (public/verification/kernels.json, written by
 * `npm run verify:kernels`): a new record with other figures fails here until
 * both languages say them.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

interface RandomLayouts {
  seed: number;
  layouts: number;
  agreed: number;
  calls: number;
  callsAgreed: number;
  lookups: number;
  lookupsAgreed: number;
}
interface KernelRow {
  kernel: string;
  packageVersion: string;
  release: string;
  verified: boolean;
  tested: number;
  agreed: number;
  seconds: { bootAndRecord: number; check: number };
  randomLayouts?: RandomLayouts | null;
  randomCallLogs?: RandomLayouts | null;
}
const record = JSON.parse(readFileSync('public/verification/kernels.json', 'utf8')) as {
  date: string;
  kernels: KernelRow[];
};
const pages = {
  en: readFileSync('content/en/16-fidelity.md', 'utf8'),
  zh: readFileSync('content/zh-CN/16-fidelity.md', 'utf8'),
};
/** The table row of a page that names this kernel's package version and release. */
function row(page: string, k: KernelRow): string {
  const line = page.split('\n').find((l) => l.startsWith('|') && l.includes(k.packageVersion) && l.includes(k.release));
  expect(line, `a row for ${k.release} (${k.packageVersion})`).toBeDefined();
  return line ?? '';
}
const secs = (s: number) => Math.round(s).toString();
/** The text of a page from the heading that starts with `start` to the next heading of its level. */
function section(page: string, start: string): string {
  const from = page.indexOf(`\n${start}`);
  expect(from, `a section "${start}"`).toBeGreaterThan(-1);
  const next = page.indexOf('\n### ', from + 1);
  const end = page.indexOf('\n## ', from + 1);
  const stops = [next, end].filter((i) => i > -1);
  return page.slice(from, stops.length ? Math.min(...stops) : undefined);
}
/** Each random draw: the record's field and the heading of its section, per language. */
const draws = [
  { field: 'randomLayouts', en: '### Around the group', zh: '### 组的外围' },
  { field: 'randomCallLogs', en: '### As programs make the calls', zh: '### 按程序的实际调用来' },
] as const;

describe('fidelity chapter and the verification record', () => {
  it('has every booted kernel verified in the record', () => {
    expect(record.kernels.length).toBeGreaterThan(0);
    for (const k of record.kernels) expect(k.verified, k.kernel).toBe(true);
  });

  for (const [lang, page] of Object.entries(pages)) {
    it(`states each kernel's choices and times as recorded (${lang})`, () => {
      for (const k of record.kernels) {
        const cells = row(page, k)
          .split('|')
          .map((c) => c.trim());
        expect(cells).toContain(String(k.tested));
        // Every row is verified (above): all its choices agreed.
        expect(cells).toContain('100%');
        const unit = lang === 'en' ? ' s' : ' 秒';
        expect(cells).toContain(secs(k.seconds.bootAndRecord) + unit);
        expect(cells).toContain(secs(k.seconds.check) + unit);
      }
    });

    for (const draw of draws) {
      it(`states each kernel's ${draw.field} as recorded (${lang})`, () => {
        const text = section(page, lang === 'en' ? draw.en : draw.zh);
        for (const k of record.kernels) {
          const r = k[draw.field];
          expect(r, `${k.kernel} ran ${draw.field}`).toBeTruthy();
          if (!r) continue;
          const version = k.packageVersion.replace(/-\d+$/, '');
          const line = text.split('\n').find((l) => l.startsWith('|') && l.includes(`Debian ${version}`));
          expect(line, `a ${draw.field} row for Debian ${version}`).toBeDefined();
          const of = (a: number, b: number) => (lang === 'en' ? `${a} of ${b}` : `${a}/${b}`);
          expect(line).toContain(of(r.callsAgreed, r.calls));
          expect(line).toContain(of(r.lookupsAgreed, r.lookups));
          expect(line).toContain(lang === 'en' ? `${r.layouts} (${r.seed})` : `${r.layouts}（${r.seed}）`);
        }
      });
    }
  }

  it('dates the run as the record does', () => {
    const day = new Date(record.date);
    const [y, m, d] = [day.getUTCFullYear(), day.getUTCMonth() + 1, day.getUTCDate()];
    const month = day.toLocaleString('en', { month: 'long', timeZone: 'UTC' });
    expect(pages.en).toContain(`of ${d} ${month} ${y}`);
    expect(pages.zh).toContain(`${y} 年 ${m} 月 ${d} 日`);
  });
});
