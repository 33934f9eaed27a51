/**
 * Hostile and extreme URL values: each page names the parameter it
 * refused, runs with its defaults in place of it, and stays responsive.
 * Responsive is checked as behaviour, never as a time: the page keeps drawing
 * frames and answers the test's calls, and long work is done in slices whose
 * progress the page shows step by step. How long the longest task lasts is a
 * benchmark figure: scripts/bench-hostile.mjs prints it for these cases.
 */
import { expect, type Page, test } from '@playwright/test';
import { keepsDrawing } from './frames';
import { DISPATCH_CASES, LOOKUP_LINES, LOOKUP_MILLION } from './hostile-cases.mjs';

/** The settings the dispatch scene runs with, and the speed menu's value (null before the scene is mounted). */
const applied = (page: Page) =>
  page.locator('reuseport-dispatch').evaluate((el) => {
    const scene = (el as HTMLElement & { __dispatch?: { sim: { opts: object } } }).__dispatch;
    const speed = (el.shadowRoot?.querySelector('select[id$="speed"]') as HTMLSelectElement | null)?.value;
    return scene ? JSON.stringify({ ...scene.sim.opts, speed }) : null;
  });

/** What the dispatch page runs with when the URL gives nothing: what a refused value must leave in place. */
const defaults = new Map<string, string>();
async function dispatchDefaults(page: Page, path = './dispatch/') {
  if (!defaults.has(path)) {
    const plain = await page.context().newPage();
    await plain.goto(path);
    await expect(plain.locator('reuseport-dispatch .rl-dv-summary')).toContainText('TCP group on kernel 6.18');
    await expect.poll(() => applied(plain)).not.toBeNull();
    defaults.set(path, (await applied(plain))!);
    await plain.close();
  }
  return defaults.get(path);
}

for (const [query, named] of DISPATCH_CASES) {
  test(`dispatch page: ?${query.slice(0, 40)} is named, the defaults run, and the page stays responsive`, async ({ page }) => {
    await page.goto(`./dispatch/?${query}`);
    const w = page.locator('reuseport-dispatch');
    const alert = w.locator('.rl-errors');
    await expect(alert).toContainText(named);
    await expect(alert).not.toContainText('failed to load');
    // The default group stands in for the refused value: the scene runs with every default, as with no query.
    await expect(w.locator('.rl-dv-summary')).toContainText('TCP group on kernel 6.18');
    const want = await dispatchDefaults(page);
    await expect.poll(() => applied(page)).toBe(want);
    await keepsDrawing(page);
  });
}

test('dispatch page: a pasted client list of a million lines is refused at the line past 5000, and the page stays responsive', async ({ page }) => {
  await page.goto('./dispatch/');
  const w = page.locator('reuseport-dispatch');
  await expect(w.locator('.rl-dv-summary')).toContainText('TCP group on kernel 6.18');
  await w.getByRole('button', { name: 'Settings' }).click();
  const list = w.getByLabel(/^Client list/);
  // A paste as the browser delivers it (a 17 MB string through the protocol would test Playwright, not the page).
  await list.evaluate((el) => {
    const data = new DataTransfer();
    data.setData('text/plain', '198.18.0.1 40000\n'.repeat(1_000_000));
    el.dispatchEvent(new ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true }));
  });
  await expect(w.locator('.rl-errors')).toContainText('at most 5000 clients; line 5001');
  await expect(list).toHaveValue('');
  await keepsDrawing(page);
  // The page answers input after the refusal: the list takes a typed client.
  await list.fill('198.18.0.1 40000');
  await expect(list).toHaveValue('198.18.0.1 40000');
});

test('dispatch page: a typed client list of 5001 clients is refused on Apply, naming line 5001', async ({ page }) => {
  await page.goto('./dispatch/');
  const w = page.locator('reuseport-dispatch');
  await expect(w.locator('.rl-dv-summary')).toContainText('200 clients');
  await w.getByRole('button', { name: 'Settings' }).click();
  await w.getByLabel(/^Client list/).evaluate((el) => {
    (el as HTMLTextAreaElement).value = `# mine\n${'198.18.0.1 40000\n'.repeat(5001)}`;
  });
  await w.getByRole('button', { name: 'Apply and restart' }).click();
  await expect(w.locator('.rl-errors')).toContainText('at most 5000 clients; line 5002');
  await expect(w.locator('.rl-dv-summary')).toContainText('200 clients');
});

test('lookup page: listeners=1000000 at kernel 4.4 is named by the analyser, also after it has analysed the text', async ({ page }) => {
  await page.goto('./lookup/?kernel=4.4&listeners=1000000&text=10.0.0.2%2040000%2010.0.0.1%208080');
  const paste = page.locator('reuseport-paste');
  await expect(paste.getByRole('alert').first()).toContainText('URL parameter listeners=1000000 is not valid here and was ignored.');
  await keepsDrawing(page);
});

test('one-connection widget: kernel 4.4 with 1,000,000 listeners answers without freezing, and its card says what it leaves out', async ({ page }) => {
  // The widget in an iframe page, its attributes from the query.
  await page.goto(`./${LOOKUP_MILLION}`);
  const w = page.locator('reuseport-lookup');
  const status = w.getByRole('status');
  await expect(status).toContainText('1 line', { timeout: 60_000 });
  const card = w.locator('details.rl-explain');
  await expect(card).toHaveCount(1);
  await expect(card).toContainText(/[\d,]+ listeners: past the first 256, only those that took the lead are listed/);
  await keepsDrawing(page);
});

test('one-connection widget: 200 lines at kernel 4.4 with 1,000,000 listeners are answered a slice at a time, never freezing the page', async ({ page }) => {
  // Each line scans the whole chain (tens of ms in wasm); all 200 in one task froze the tab for seconds.
  test.setTimeout(150_000);
  await page.goto(`./${LOOKUP_MILLION}`);
  const w = page.locator('reuseport-lookup');
  await expect(w.getByRole('status')).toContainText('1 line explained.', { timeout: 60_000 });
  await w.getByLabel('4-tuples').fill(LOOKUP_LINES);
  // Every status the widget shows while it works, and the frames the page draws meanwhile, from the click on.
  await w.evaluate((el) => {
    const host = window as unknown as { __said: string[]; __frames: number; __done: boolean };
    host.__said = [];
    host.__frames = 0;
    host.__done = false;
    const status = el.querySelector('[role=status]') ?? el.shadowRoot?.querySelector('[role=status]');
    new MutationObserver(() => {
      const text = status?.textContent ?? '';
      if (host.__said.at(-1) !== text) host.__said.push(text);
      if (/200 lines explained/.test(text)) host.__done = true;
    }).observe(status!, { childList: true, characterData: true, subtree: true });
    // Frames drawn while the status says the work is under way (between its slices).
    const frame = () => {
      if (host.__done) return;
      if (/ of 200 /.test(host.__said.at(-1) ?? '')) host.__frames++;
      requestAnimationFrame(frame);
    };
    requestAnimationFrame(frame);
  });
  await w.getByRole('button', { name: 'Explain' }).click();
  await expect(w.getByRole('status')).toContainText('200 lines explained.', { timeout: 120_000 });
  const { said, frames } = await page.evaluate(() => {
    const host = window as unknown as { __said: string[]; __frames: number };
    return { said: host.__said, frames: host.__frames };
  });
  // Sliced: the status counts the lines done in several steps, each further than the last, before the end.
  const done = said
    .map((t) => /(\d+) of 200/.exec(t)?.[1])
    .filter((n) => n !== undefined)
    .map(Number);
  expect(done.length, `progress shown: ${JSON.stringify(said)}`).toBeGreaterThanOrEqual(3);
  for (let i = 1; i < done.length; i++) expect(done[i]!, `progress moves on: ${done.join(', ')}`).toBeGreaterThan(done[i - 1]!);
  // And between the slices the page had its turns: it drew frames while the lines were being answered.
  expect(frames, 'frames drawn while answering').toBeGreaterThanOrEqual(3);
  await expect(w.locator('details.rl-explain')).toHaveCount(50);
});

test('one-connection widget: past the model bound, the model names the bound; a new error never stands beside an old status', async ({ page }) => {
  await page.goto('./lookup/');
  const w = page.locator('reuseport-lookup');
  await w.scrollIntoViewIfNeeded();
  const status = w.getByRole('status');
  await expect(status).not.toBeEmpty();
  await w.getByLabel('Kernel', { exact: true }).fill('4.4');
  await w.getByLabel('Listeners', { exact: true }).fill('4294967295');
  await w.getByRole('button', { name: 'Explain' }).click();
  await expect(w.getByRole('alert')).toContainText('1048576');
  await expect(status).toBeEmpty();
  await w.getByLabel('Listeners', { exact: true }).fill('1.5');
  await w.getByRole('button', { name: 'Explain' }).click();
  await expect(w.getByRole('alert')).toContainText('Listeners: give a whole number');
  await expect(status).toBeEmpty();
});

test('iframe pages name a hostile parameter instead of starting the widget', async ({ page }) => {
  await page.goto(`./embed/dispatch/?rate=1000000000&listeners=${'9'.repeat(100)}`);
  const w = page.locator('reuseport-dispatch');
  await expect(w.locator('.rl-errors')).toContainText('rate=1000000000');
  await expect(w.locator('.rl-errors')).toContainText(`listeners=${'9'.repeat(32)}…`);
  const want = await dispatchDefaults(page, './embed/dispatch/');
  await expect.poll(() => applied(page)).toBe(want);
  await keepsDrawing(page);
});

test('bind checker iframe: a layout that is not JSON, or not calls, is named in the widget instead of a blank box', async ({ page }) => {
  // A layout that was not JSON threw while the element read its attributes: the box stayed empty, the error only in the console.
  await page.goto(`./embed/bind-check/?layout=${encodeURIComponent('{"calls":[')}`);
  await expect(page.locator('reuseport-bind-check').getByRole('alert')).toContainText('the layout attribute is not JSON');
  // Entries that are not calls were kept and crashed the drawing ("Cannot read properties of null").
  const calls = [{ call: 'socket', family: 'inet', proto: 'tcp' }, null];
  await page.goto(`./embed/bind-check/?layout=${encodeURIComponent(JSON.stringify({ calls }))}`);
  const w = page.locator('reuseport-bind-check');
  await expect(w.getByRole('alert')).toContainText("an entry of the layout's calls is not a call");
  await expect(w.locator('.rl-bind-result').first()).toHaveText(/^ok/);
  // 40 sockets after a call the model cannot replay passed the 32-socket bound.
  const many = [calls[0], { call: 'connect', fd: 0, addr: '127.0.0.1', port: 9 }, ...Array.from({ length: 40 }, () => calls[0])];
  await page.goto(`./embed/bind-check/?layout=${encodeURIComponent(JSON.stringify({ calls: many }))}`);
  await expect(w.getByRole('alert')).toContainText('the layout makes 41 sockets; the checker takes at most 32');
  await expect(w.locator('.rl-bind-socket')).toHaveCount(2);
  await keepsDrawing(page);
});

test('bind checker iframe in Chinese: a layout that is not JSON is named in Chinese', async ({ page }) => {
  // The message read "This widget failed to start: <reuseport-bind>: the layout attribute is not JSON" on a Chinese page.
  await page.goto(`./embed/bind-check/?lang=zh-CN&layout=${encodeURIComponent('{"calls":[')}`);
  const alert = page.locator('reuseport-bind-check').getByRole('alert');
  await expect(alert).toContainText('此组件未能启动：<reuseport-bind>：layout 属性不是 JSON：');
});
