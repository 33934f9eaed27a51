/**
 * Embedding: a course page on another origin (served here by routing
 * http://course.test/, which no server answers) embeds the widgets with the
 * one embed script and with the iframe pages. What this pins:
 * - the host page's styles are the same before and after the widgets load,
 *   and the host's rules do not reach inside a widget;
 * - the widgets work there and their events arrive (DOM events and iframe
 *   messages, with the iframe's height);
 * - two widgets on one page keep their own state;
 * - an attribute changed after mount takes effect;
 * - bad iframe parameters are named, not ignored;
 * - the site and the iframe pages run under the strict policy with no
 *   violation, and carry it as a <meta> element;
 * - "Embed this" writes snippets that work.
 */
import { expect, test, type Page } from '@playwright/test';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

const HOST = 'http://course.test';

/** A plain course page with its own aggressive styles: the widgets must not change them, nor be changed by them. */
const hostPage = (body: string) => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Course</title>
<style>
:root { font-size: 20px; }
body { font-family: Georgia, serif; color: rgb(10, 20, 30); background: rgb(250, 240, 230); margin: 31px; line-height: 1.1; }
button { background: rgb(200, 0, 0); color: rgb(255, 255, 0); border-radius: 12px; }
input { border: 4px dotted rgb(0, 128, 0); }
h1 { text-transform: uppercase; }
.rl-dv, .rl-lookup, table, canvas { display: none !important; }
</style></head><body>
<h1 id="title">My course</h1>
<p id="para">Text <button id="own">Own button</button> <input id="own-input" value="x"></p>
<div id="app"></div>
${body}
<script>
window.__events = [];
for (const k of ['ready', 'started', 'stepped', 'answered', 'completed', 'error'])
  document.addEventListener('reuseport:' + k, (e) => window.__events.push({ type: k, tag: e.target.localName, id: e.target.id, detail: e.detail }));
window.__messages = [];
window.addEventListener('message', (e) => window.__messages.push({ origin: e.origin, data: e.data }));
</script>
</body></html>`;

/** Serves `html` as the course page, and the site with the CORS header a host of the embed script sends. */
async function course(page: Page, baseURL: string, html: string): Promise<void> {
  const site = new URL(baseURL).origin;
  await page.route(`${HOST}/**`, (r) => r.fulfill({ contentType: 'text/html', body: html }));
  await page.route(`${site}/**`, async (r) => {
    const res = await r.fetch();
    await r.fulfill({ response: res, headers: { ...res.headers(), 'access-control-allow-origin': '*' } });
  });
}

const HOST_PROPS = [
  'font-family',
  'color',
  'background-color',
  'margin-top',
  'line-height',
  'border-top-style',
  'border-radius',
  'text-transform',
  'font-size',
];

/** Computed styles of the host page's own elements. */
const hostStyles = (page: Page) =>
  page.evaluate((props) => {
    const out: Record<string, string> = {};
    for (const sel of ['html', 'body', '#title', '#para', '#own', '#own-input']) {
      const cs = getComputedStyle(document.querySelector(sel)!);
      for (const p of props) out[`${sel} ${p}`] = cs.getPropertyValue(p);
    }
    return out;
  }, HOST_PROPS);

const events = (page: Page) =>
  page.evaluate(() => (window as unknown as { __events: { type: string; tag: string; id: string; detail: Record<string, unknown> }[] }).__events);

test('a script-tag embed on another origin works, keeps to itself, and sends its events', async ({ page, baseURL }) => {
  const site = baseURL!.replace(/\/$/, '');
  await course(
    page,
    baseURL!,
    hostPage(
      `<reuseport-lookup id="lk" kernel="6.18" listeners="4" secret="0x2f3923d9" tuples="10.0.0.2 40000 10.0.0.1 80"></reuseport-lookup>
       <reuseport-dispatch id="a" listeners="4" clients="20" autoplay="false" compact></reuseport-dispatch>
       <reuseport-dispatch id="b" listeners="6" clients="30" autoplay="false"></reuseport-dispatch>`,
    ),
  );
  await page.goto(`${HOST}/`);
  const before = await hostStyles(page);
  await page.addScriptTag({ url: `${site}/embed/reuseport-lab.js`, type: 'module' });
  await expect
    .poll(
      async () =>
        (await events(page))
          .filter((e) => e.type === 'ready')
          .map((e) => e.id)
          .sort(),
      { timeout: 30_000 },
    )
    .toEqual(['a', 'b', 'lk']);
  expect(await hostStyles(page), 'the host page looks as it did').toEqual(before);

  // The host's rules do not reach in: its `table { display: none !important }` and button colours stop at the shadow root.
  const lookup = page.locator('#lk');
  await lookup.getByRole('button', { name: 'Explain' }).click();
  await expect(lookup.locator('table.rl-answers')).toBeVisible();
  const inner = await lookup.getByRole('button', { name: 'Explain' }).evaluate((b) => getComputedStyle(b).backgroundColor);
  expect(inner).not.toBe('rgb(200, 0, 0)');
  await expect(page.locator('#b canvas')).toBeVisible();
  const answered = (await events(page)).filter((e) => e.type === 'answered' && e.id === 'lk');
  expect(answered.length).toBeGreaterThan(0);
  expect(answered.at(-1)!.detail).toMatchObject({ kernel: '6.18', answered: 1, refused: 0 });

  // Two visualizers keep their own groups.
  await expect(page.locator('#a .rl-dv-summary')).toContainText('4 listening members');
  await expect(page.locator('#b .rl-dv-summary')).toContainText('6 listening members');

  // An attribute changed after mount restarts the widget with it.
  await page.locator('#a').evaluate((el) => el.setAttribute('listeners', '9'));
  await expect(page.locator('#a .rl-dv-summary')).toContainText('9 listening members');
  await expect(page.locator('#b .rl-dv-summary')).toContainText('6 listening members');
  // Nothing was added to the host's global scope or document besides the elements' own content.
  expect(await page.evaluate(() => document.querySelectorAll('body > :not(h1, p, div#app, script, reuseport-lookup, reuseport-dispatch)').length)).toBe(0);
  // The old bundle mounted a second visualizer into any element with id="app".
  expect(await page.locator('#app').innerHTML()).toBe('');
});

test('an element added after the page loaded is found and started', async ({ page, baseURL }) => {
  const site = baseURL!.replace(/\/$/, '');
  await course(page, baseURL!, hostPage(`<script defer src="${site}/embed/reuseport-lab.js"></script>`));
  await page.goto(`${HOST}/`);
  await page.evaluate(() => {
    const el = document.createElement('reuseport-bind-check');
    el.id = 'late';
    el.setAttribute('kernel', '6.1');
    document.body.append(el);
  });
  await expect.poll(async () => (await events(page)).filter((e) => e.type === 'ready').map((e) => e.id), { timeout: 30_000 }).toEqual(['late']);
  // Its default call log: two sockets that set SO_REUSEPORT, bind and listen.
  await expect(page.locator('#late').getByText('setsockopt(1, SO_REUSEPORT').first()).toBeVisible();
});

test('an iframe embed posts its events and its height to the parent, and names a bad parameter', async ({ page, baseURL }) => {
  const site = baseURL!.replace(/\/$/, '');
  await course(
    page,
    baseURL!,
    hostPage(
      `<iframe id="ok" ` +
        `src="${site}/embed/lookup/?kernel=6.1&listeners=4&secret=0x2f3923d9&tuples=10.0.0.2%2040000%2010.0.0.1%2080` +
        `&lang=zh-CN&origin=${encodeURIComponent(HOST)}" ` +
        `width="600" height="100"></iframe>
       <iframe id="bad" src="${site}/embed/bind-check/?kernel=6.12&listners=4" width="600" height="100"></iframe>`,
    ),
  );
  await page.goto(`${HOST}/`);
  type Msg = { origin: string; data: { source: string; widget: string; type: string; detail: Record<string, unknown> } };
  const messages = () => page.evaluate(() => (window as unknown as { __messages: Msg[] }).__messages);
  await expect.poll(async () => (await messages()).some((m) => m.data.widget === 'lookup' && m.data.type === 'ready'), { timeout: 30_000 }).toBe(true);
  const frame = page.frameLocator('#ok');
  // lang=zh-CN: the widget speaks Chinese.
  // The tuples in the URL are answered at start; "解释" answers them again.
  await expect.poll(async () => (await messages()).filter((m) => m.data.type === 'answered').length, { timeout: 30_000 }).toBe(1);
  await frame.getByRole('button', { name: '解释' }).click();
  await expect.poll(async () => (await messages()).filter((m) => m.data.type === 'answered').map((m) => m.data.detail.answered)).toEqual([1, 1]);
  const heights = (await messages()).filter((m) => m.data.widget === 'lookup' && m.data.type === 'height').map((m) => m.data.detail.height as number);
  expect(Math.max(...heights), 'the frame reports the height of its content').toBeGreaterThan(300);
  for (const m of await messages()) expect(m.data.source).toBe('reuseport-lab');

  const bad = page.frameLocator('#bad');
  await expect(bad.getByRole('alert')).toContainText("'listners'");
  await expect
    .poll(async () => (await messages()).find((m) => m.data.widget === 'bind-check' && m.data.type === 'error')?.data.detail.problems)
    .toEqual([expect.stringContaining("'listners'")]);
});

test('the iframe pages refuse what they cannot take, naming it', async ({ page }) => {
  const cases: [string, string][] = [
    ['embed/dispatch/?lang=fr', "'lang'"],
    ['embed/dispatch/?compact=maybe', "'compact'"],
    ['embed/dispatch/?listeners=4&listeners=5', "'listeners' is given twice"],
    ['embed/lookup/?origin=javascript:alert(1)', "'origin'"],
    [`embed/lookup/?tuples=${'x'.repeat(9000)}`, 'the limit is 8192'],
  ];
  for (const [path, says] of cases) {
    await page.goto(`./${path}`);
    await expect(page.getByRole('alert'), path).toContainText(says);
  }
});

test('the site, the iframe pages and the embed script run under the strict Content-Security-Policy', async ({ page }) => {
  const readme = readFileSync('README.md', 'utf8');
  const csp = /`(default-src [^`]+)`/.exec(readme)?.[1];
  expect(csp, 'README names the policy for hosts').toBeTruthy();
  expect(csp).not.toContain("'unsafe-inline' 'wasm"); // no inline script
  expect(/script-src ([^;]+)/.exec(csp!)?.[1]?.trim()).toBe("'self' 'wasm-unsafe-eval'");
  await page.route('**/*', async (route) => {
    const response = await route.fetch();
    await route.fulfill({ response, headers: { ...response.headers(), 'content-security-policy': csp! } });
  });
  await page.addInitScript(() => {
    (window as unknown as { __violations: string[] }).__violations = [];
    document.addEventListener('securitypolicyviolation', (e) =>
      (window as unknown as { __violations: string[] }).__violations.push(`${e.violatedDirective} ${e.blockedURI}`),
    );
  });
  const refused: string[] = [];
  page.on('console', (m) => {
    if (/Content Security Policy|Refused to/.test(m.text())) refused.push(m.text());
  });
  for (const path of [
    './',
    './embedding/',
    './zh-cn/embedding/',
    './lookup/',
    './traces/?trace=udp-v4-specific-8.json',
    './bind-rules/',
    './embed/dispatch/?listeners=4',
    './embed/exercise/',
    './embed/paste/',
  ]) {
    await page.goto(path);
    const meta = await page.locator('meta[http-equiv="content-security-policy"]').getAttribute('content');
    expect(meta, `${path} carries the policy as a meta element`).toContain("script-src 'self' 'wasm-unsafe-eval'");
    await page.evaluate(() => [...document.querySelectorAll('*')].find((e) => e.localName.startsWith('reuseport-'))?.scrollIntoView());
    await expect
      .poll(
        () => page.evaluate(() => [...document.querySelectorAll('*')].some((e) => e.localName.startsWith('reuseport-') && e.shadowRoot?.firstElementChild)),
        { message: path, timeout: 30_000 },
      )
      .toBe(true);
    expect(
      await page.evaluate(() => document.querySelectorAll('script:not([src]):not([type="application/json"]):not([type="application/ld+json"])').length),
      `${path}: no inline script`,
    ).toBe(0);
    expect(await page.evaluate(() => (window as unknown as { __violations: string[] }).__violations), path).toEqual([]);
  }
  expect(refused).toEqual([]);
});

test('"Embed this" writes a script snippet and an iframe snippet for the settings now, and the iframe one works', async ({ page }) => {
  await page.goto('./lookup/');
  const lookup = page.locator('reuseport-lookup');
  await lookup.scrollIntoViewIfNeeded();
  // The snippet is for the form as it is now.
  await lookup.getByLabel('Listeners', { exact: true }).fill('5');
  const panel = lookup.locator('details.rl-embed');
  await panel.locator('summary').click();
  const snippet = panel.getByRole('textbox');
  await expect(snippet).toHaveValue(/<script defer src="http:\/\/127\.0\.0\.1:\d+\/embed\/reuseport-lab\.js"><\/script>\n<reuseport-lookup [^>]*listeners="5"/);
  await panel.getByRole('radio', { name: 'iframe' }).check();
  const iframe = await snippet.inputValue();
  const src = /src="([^"]+)"/.exec(iframe)![1]!.replaceAll('&amp;', '&');
  expect(new URL(src).pathname).toBe('/embed/lookup/');
  expect(new URL(src).searchParams.get('listeners')).toBe('5');
  await page.goto(src);
  await expect(page.locator('reuseport-lookup')).toHaveAttribute('listeners', '5');
  await expect(page.getByRole('button', { name: 'Explain' })).toBeVisible();
  // Where the widget is itself embedded, there is no panel.
  await expect(page.locator('details.rl-embed')).toHaveCount(0);
});

// Why: after a refused file the trace viewer kept data-state="loading" for good, so an embedder waiting for a
// terminal state ("ready" or "error") never saw one. Each refusal now ends in "error", and a good file after it in "ready".
test('the trace viewer ends in a terminal state after a refused file', async ({ page }) => {
  await page.goto('./traces/');
  const viewer = page.locator('reuseport-traces');
  await expect(viewer).toHaveAttribute('data-state', 'ready', { timeout: 30_000 });
  const input = viewer.locator('input[type=file]');
  const bad = JSON.parse(readFileSync('public/traces/tcp-v4-specific-8.json', 'utf8'));
  delete bad.group;
  const refused: [string, string][] = [
    ['not-json.json', '{"format": '],
    ['no-group.json', JSON.stringify(bad)],
  ];
  for (const [name, body] of refused) {
    await input.setInputFiles({ name, mimeType: 'application/json', buffer: Buffer.from(body) });
    await expect(viewer.locator('.rl-errors'), name).toContainText(name, { timeout: 30_000 });
    await expect(viewer, name).toHaveAttribute('data-state', 'error', { timeout: 30_000 });
  }
  await input.setInputFiles({ name: 'mine.json', mimeType: 'application/json', buffer: readFileSync('public/traces/tcp-v4-specific-8.json') });
  await expect(viewer).toHaveAttribute('data-state', 'ready', { timeout: 30_000 });
});

test('a hostile host page (huge root and body fonts, coloured, spaced, upper-case text) does not reach into the widgets', async ({ page, baseURL }) => {
  // What inherits crosses a shadow boundary, and a rem is the host's root font size: with `html { font-size: 30px }` the
  // widgets' hints grew to twice their labels and the visualizer's figures ran off its edge.
  const site = baseURL!.replace(/\/$/, '');
  const hostile = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Course</title><style>
    html { font-size: 30px; }
    body { font: italic 40px/2 serif; color: rgb(200, 0, 100); letter-spacing: 3px; word-spacing: 10px; text-align: center;
           text-transform: uppercase; white-space: pre; }
    </style></head><body>
    <reuseport-dispatch id="dv" listeners="4" clients="20" autoplay="false" compact></reuseport-dispatch>
    <reuseport-lookup id="lk" kernel="6.18" listeners="4" secret="0x2f3923d9" tuples="10.0.0.2 40000 10.0.0.1 80"></reuseport-lookup>
    <script type="module" src="${site}/embed/reuseport-lab.js"></script></body></html>`;
  await course(page, baseURL!, hostile);
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto(`${HOST}/`);
  for (const id of ['dv', 'lk']) await expect(page.locator(`#${id}`)).toHaveAttribute('data-mounted', '', { timeout: 30_000 });
  await expect(page.locator('#lk table.rl-answers')).toBeVisible();
  const look = await page.evaluate(() => {
    const out: Record<string, Record<string, string>> = {};
    for (const id of ['dv', 'lk']) {
      const root = document.getElementById(id)!.shadowRoot!;
      const s = getComputedStyle(root.querySelector('.rl-root')!);
      const hint = root.querySelector('.rl-hint, .rl-dv-summary');
      out[id] = {
        fontSize: s.fontSize,
        fontStyle: s.fontStyle,
        serif: String(/(^|, )serif/.test(s.fontFamily)),
        color: s.color,
        letterSpacing: s.letterSpacing,
        textTransform: s.textTransform,
        whiteSpace: s.whiteSpace,
        hint: hint ? getComputedStyle(hint).fontSize : 'none',
      };
    }
    return out;
  });
  for (const id of ['dv', 'lk']) {
    expect(look[id], `#${id}: the widget's own type and colour`).toMatchObject({
      fontSize: '16px',
      fontStyle: 'normal',
      serif: 'false',
      color: 'rgb(29, 29, 31)',
      letterSpacing: 'normal',
      textTransform: 'none',
      whiteSpace: 'normal',
    });
    // Its small print is small: at most 16 px, not 0.85 of the host's 30 px root.
    expect(Number.parseFloat(look[id]!.hint!), `#${id}: small print in the widget's own units`).toBeLessThanOrEqual(16);
  }
  // Nothing of a widget sticks out of its box.
  const out = await page.evaluate(() =>
    ['dv', 'lk'].flatMap((id) => {
      const host = document.getElementById(id)!;
      const right = host.getBoundingClientRect().right;
      return [...host.shadowRoot!.querySelectorAll('*')]
        .filter((e) => {
          const b = e.getBoundingClientRect();
          return b.width > 0 && b.right > right + 1;
        })
        .map((e) => `#${id} ${e.localName}.${e.getAttribute('class') ?? ''}`);
    }),
  );
  expect(out, 'elements wider than their widget').toEqual([]);
});

test('on a host that sends no CORS header, each widget says what failed and which header its site must send', async ({ baseURL, page }) => {
  // A module script from another site loads only with Access-Control-Allow-Origin: the element stayed empty, with
  // nothing on screen. The embed script is a classic script, which loads without CORS and says so in every element.
  // Two servers of this test: the course page at http://localhost:<a>, and the site at http://127.0.0.1:<b>, relayed
  // from the preview without any CORS header (the preview answers a localhost origin with one, a routed response
  // passes the browser's CORS check, and a made-up public host may not load from loopback at all).
  const preview = baseURL!.replace(/\/$/, '');
  const listen = async (handle: Parameters<typeof createServer>[1]) => {
    const server = createServer(handle);
    await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
    return { server, port: (server.address() as AddressInfo).port };
  };
  const site = await listen(async (req, res) => {
    const r = await fetch(`${preview}${req.url}`);
    res.writeHead(r.status, { 'content-type': r.headers.get('content-type') ?? 'application/octet-stream' }).end(Buffer.from(await r.arrayBuffer()));
  });
  const origin = `http://127.0.0.1:${site.port}`;
  const body = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Course</title></head><body>
    <reuseport-dispatch id="en" listeners="4"></reuseport-dispatch>
    <reuseport-lookup id="zh" lang="zh-CN"></reuseport-lookup>
    <script defer src="${origin}/embed/reuseport-lab.js"></script></body></html>`;
  const course = await listen((_req, res) => res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(body));
  try {
    await page.goto(`http://localhost:${course.port}/`);
    const en = page.locator('#en').getByRole('alert');
    await expect(en).toContainText('could not load its code');
    await expect(en).toContainText('"Access-Control-Allow-Origin: *"');
    await expect(en).toContainText(origin);
    await expect(page.locator('#zh').getByRole('alert')).toContainText('Access-Control-Allow-Origin: *');
    await expect(page.locator('#zh').getByRole('alert')).toContainText('此组件无法');
    // One added later says it too.
    await page.evaluate(() => document.body.append(Object.assign(document.createElement('reuseport-bind-check'), { id: 'late' })));
    await expect(page.locator('#late').getByRole('alert')).toContainText('Access-Control-Allow-Origin');
  } finally {
    site.server.close();
    course.server.close();
  }
});

test('the classic embed script also works loaded as a module, as older snippets load it', async ({ page, baseURL }) => {
  const site = baseURL!.replace(/\/$/, '');
  await course(page, baseURL!, hostPage(`<reuseport-bind-check id="old" kernel="6.1"></reuseport-bind-check>`));
  await page.goto(`${HOST}/`);
  await page.addScriptTag({ url: `${site}/embed/reuseport-lab.js`, type: 'module' });
  await expect.poll(async () => (await events(page)).filter((e) => e.type === 'ready').map((e) => e.id), { timeout: 30_000 }).toEqual(['old']);
});
