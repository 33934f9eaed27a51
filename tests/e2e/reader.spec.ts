/**
 * The site as a reader meets it (that every page fits a 390 px phone is checked
 * by the crawl in site.spec.ts, which loads each page at that width):
 * - the asides (`:::note[…]`) are drawn as asides, with their titles, on every
 *   page that has one, and nowhere as a paragraph of colons;
 * - on a phone the front page's headline and buttons come before the animation.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { expect, test } from '@playwright/test';
import { builtPages, DIST } from './pages';

/** Every page a reader opens, in both languages (not the iframe pages, which a course page sizes). */
const PAGES = builtPages().filter((p) => !p.startsWith('embed/'));

test('every aside in the content is drawn as an aside with its title, in both languages', () => {
  // Built HTML against the Markdown: as many asides on the built pages as `:::note[…]` in the content, each titled.
  const md = (lang: string): string[] => {
    const walk = (d: string): string[] =>
      readdirSync(d, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(join(d, e.name)) : e.name.endsWith('.md') ? [join(d, e.name)] : []));
    return walk(`content/${lang}`).flatMap((f) => [...readFileSync(f, 'utf8').matchAll(/^:::\w+\[([^\]]+)\]/gm)].map((m) => m[1]!));
  };
  for (const [lang, prefix] of [
    ['en', ''],
    ['zh-CN', 'zh-cn/'],
  ] as const) {
    const titles: string[] = [];
    let colons = 0;
    for (const p of PAGES.filter((x) => (prefix ? x.startsWith(prefix) : !x.startsWith('zh-cn/')))) {
      const html = readFileSync(join(DIST, p, 'index.html'), 'utf8');
      for (const m of html.matchAll(/<aside aria-label="([^"]*)" class="starlight-aside starlight-aside--note"/g)) titles.push(m[1]!);
      colons += (html.match(/<p>:::/g) ?? []).length;
    }
    expect(colons, `${lang}: no aside left as a paragraph of colons`).toBe(0);
    expect(titles.sort(), `${lang}: every aside of the content, titled as written`).toEqual(md(lang).sort());
  }
});

test('an aside looks like one: a tinted box with its title above the text', async ({ page }) => {
  for (const path of ['accept-models/', 'zh-cn/accept-models/']) {
    await page.goto(`./${path}`);
    const aside = page.locator('aside.starlight-aside').first();
    await expect(aside).toBeVisible();
    const look = await aside.evaluate((a) => {
      const s = getComputedStyle(a);
      const p = getComputedStyle(a.closest('.sl-markdown-content')!);
      return { border: s.borderInlineStartWidth, bg: s.backgroundColor, pageBg: p.backgroundColor };
    });
    expect(Number.parseFloat(look.border), `${path}: the aside's side rule`).toBeGreaterThan(0);
    expect(look.bg, `${path}: the aside's tint`).not.toBe(look.pageBg);
    await expect(aside.locator('.starlight-aside__title')).toHaveText(path.startsWith('zh') ? '这里建模了什么' : 'What is modelled here');
  }
});

test('on a phone the front page says what it is, and offers its buttons, before the animation', async ({ page }) => {
  await page.setViewportSize({ width: 390, height: 844 });
  for (const path of ['', 'zh-cn/']) {
    await page.goto(`./${path}`);
    const y = async (sel: string) => (await page.locator(sel).first().boundingBox())!.y;
    const h1 = await y('.hero h1');
    const button = await y('.hero .actions a');
    const scene = await y('.hero reuseport-dispatch');
    expect(h1, `/${path}: the headline above the animation`).toBeLessThan(scene);
    expect(button, `/${path}: the first button above the animation`).toBeLessThan(scene);
    expect(button + 40, `/${path}: the first button on the first screen`).toBeLessThan(844);
  }
});

test('every page says where the project lives: the source, the CLI and the course pack, which downloads', async ({ page, request }) => {
  const repo = (JSON.parse(readFileSync('package.json', 'utf8')) as { repository: { url: string } }).repository.url;
  for (const path of ['', 'hash/', 'zh-cn/scenarios/', 'zh-cn/']) {
    await page.goto(`./${path}`);
    const nav = page.locator('nav.rl-project');
    await expect(nav.getByRole('link').first(), `/${path}: the source`).toHaveAttribute('href', repo);
    await expect(nav.getByRole('link').nth(1), `/${path}: the CLI`).toHaveAttribute('href', path.startsWith('zh') ? '/zh-cn/get/' : '/get/');
    await expect(nav.getByRole('link').nth(2), `/${path}: the pack`).toHaveAttribute('href', '/reuseport-lab-pack.zip');
    await expect(page.locator(`header a[href="${repo}"]`), `/${path}: the source in the header`).toHaveCount(1);
  }
  // The "get" page's commands carry the same URL, from the same value.
  await page.goto('./get/');
  await expect(page.locator('main')).toContainText(`cargo install --locked --git ${repo} reuseport-agent`);
  await expect(page.locator('main')).not.toContainText('{repo}');
  await page.goto('./zh-cn/get/');
  await expect(page.locator('main')).toContainText(`git clone ${repo}`);
  // The pack is a zip of the site, with its README.
  const res = await request.get('./reuseport-lab-pack.zip');
  expect(res.ok()).toBe(true);
  const zip = await res.body();
  expect(zip.subarray(0, 2).toString('latin1'), 'a zip').toBe('PK');
  expect(zip.includes(Buffer.from('reuseport-lab/PACK-README.txt'))).toBe(true);
  expect(zip.includes(Buffer.from('reuseport-lab/zh-cn/get/index.html'))).toBe(true);
  expect(zip.includes(Buffer.from('reuseport-lab/reuseport-lab-pack.zip')), 'not itself').toBe(false);
});

test('the journeys: the server page leads from each verdict to a chapter and a scenario, the lookup and the matcher to each other', async ({ page }) => {
  await page.goto('./server/');
  // A list, not a table: three columns of links did not fit a phone.
  const verdicts = page.locator('h2#from-the-verdict-to-the-explanation + ul > li');
  await expect(verdicts).toHaveCount(6);
  for (const item of await verdicts.all()) {
    await expect(item.locator('strong')).toHaveCount(1);
    await expect(item.locator('a').first(), 'a chapter').toHaveAttribute('href', /^\.\.\/[a-z-]+\/$/);
    await expect(item.locator('a[href^="../scenarios/"]').first(), 'a scenario').toHaveAttribute('href', /^\.\.\/scenarios\/[a-z-]+\/$/);
  }
  await page.goto('./zh-cn/server/');
  await expect(page.locator('main ul > li > strong', { hasText: '在哈希的正常范围内' })).toHaveCount(1);
  await page.goto('./lookup/');
  await expect(page.locator('main a[href="../scenarios/#which-scenario-looks-like-mine"]')).toHaveCount(1);
  await page.goto('./scenarios/');
  await expect(page.locator('main a[href="../lookup/"]').first()).toBeVisible();
  await expect(page.locator('main a[href="../server/"]').first()).toBeVisible();
  await page.goto('./zh-cn/lookup/');
  await expect(page.locator(`main a[href="../scenarios/#${encodeURIComponent('哪个场景像我的情况')}"]`)).toHaveCount(1);
});

test("the bind checker names each socket's UID input for its socket", async ({ page }) => {
  // Every UID input was named only "UID": a screen reader could not tell whose it was.
  await page.goto('./bind-rules/');
  const w = page.locator('reuseport-bind, reuseport-bind-check').first();
  await w.scrollIntoViewIfNeeded();
  await expect(w).toHaveAttribute('data-mounted', '', { timeout: 30_000 });
  const uids = w.getByRole('spinbutton', { name: /^Socket \d+: UID$/ });
  expect(await uids.count()).toBeGreaterThanOrEqual(2);
  const names = await uids.evaluateAll((els) => els.map((e) => e.getAttribute('aria-label')));
  expect(new Set(names).size, 'one name per socket').toBe(names.length);
});
