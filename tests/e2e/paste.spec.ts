import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { axe } from './axe';
import { expect, test, type Locator, type Page } from '@playwright/test';
import { AGENT } from '../agent';

// The paste analyser on the lookup page (<reuseport-paste>). Every expected
// connection here comes from the capture list in
// wasm/model/tests/fixtures/paste/README.md or from lines the test writes;
// every expected listener from reuseport-agent, never from the page.

const FIX = 'wasm/model/tests/fixtures/paste';
const fixture = (name: string) => readFileSync(`${FIX}/${name}`, 'utf8');
const TRACE = 'public/traces/tcp-v4-specific-8.json';
const SECRET = '0x5eed1234';
const INNER = '0x0badf00d';

/** The paste analyser (the page also holds the one-connection widget, with fields of the same names). */
const paste = (page: Page) => page.locator('reuseport-paste');

const RADIO = {
  none: 'None: show what holds for every secret',
  typed: 'Mine, typed below',
  random: 'A random boot (an example, not your server)',
} as const;

interface Settings {
  text?: string;
  bind?: string;
  kernel?: string;
  proto?: 'tcp' | 'udp';
  listeners?: number;
  closed?: string;
  mode?: keyof typeof RADIO;
  secret?: string;
  inner?: string;
}

interface ExportRow {
  line: number;
  client: string;
  server: string;
  listener: number | null;
  observed: number | null;
}

/** Records the widget's events on the page, so a test can wait for one more `reuseport:completed`. */
async function open(page: Page, url = './lookup/'): Promise<Locator> {
  await page.addInitScript(() => {
    const w = window as unknown as { __rl: { type: string; detail: unknown }[] };
    w.__rl = [];
    for (const type of ['reuseport:started', 'reuseport:answered', 'reuseport:completed'])
      document.addEventListener(type, (e) => w.__rl.push({ type, detail: (e as CustomEvent).detail }));
  });
  await page.goto(url);
  const w = paste(page);
  await w.scrollIntoViewIfNeeded();
  await expect(w).toHaveAttribute('data-state', 'ready');
  return w;
}

const completedCount = (page: Page) =>
  page.evaluate(() => (window as unknown as { __rl: { type: string }[] }).__rl.filter((e) => e.type === 'reuseport:completed').length);

async function fill(w: Locator, s: Settings) {
  if (s.text !== undefined) await w.getByLabel('Connections', { exact: true }).fill(s.text);
  await w.getByLabel('Listening on').fill(s.bind ?? '');
  if (s.kernel) await w.getByLabel('Kernel', { exact: true }).fill(s.kernel);
  if (s.proto) await w.getByLabel('Protocol').selectOption(s.proto);
  if (s.listeners !== undefined) await w.getByLabel('Listeners in the group').fill(String(s.listeners));
  await w.getByLabel('Closed listeners').fill(s.closed ?? '');
  await w.getByRole('radio', { name: RADIO[s.mode ?? 'none'] }).check();
  if (s.secret !== undefined) await w.getByLabel('IPv4 key').fill(s.secret);
  if (s.inner !== undefined) await w.getByLabel('IPv6 inner key').fill(s.inner);
}

/** Clicks `button` (Analyse, Flip) and waits for the analysis it starts to complete without a problem listed. */
async function runs(page: Page, button: Locator, timeout = 60_000) {
  const before = await completedCount(page);
  await button.click();
  await expect.poll(() => completedCount(page), { timeout, message: 'the analysis completes (reuseport:completed)' }).toBe(before + 1);
  const w = paste(page);
  await expect(w).toHaveAttribute('data-state', 'ready');
  await expect(w.getByRole('alert')).toHaveCount(0);
}

const analyse = (page: Page, timeout?: number) => runs(page, paste(page).getByRole('button', { name: 'Analyse' }), timeout);

/** Every row of the table, through the JSON export (the table itself shows only the rows in view). */
async function exported(page: Page): Promise<{ meta: Record<string, unknown>; rows: ExportRow[] }> {
  const [dl] = await Promise.all([page.waitForEvent('download'), paste(page).getByRole('button', { name: 'Download JSON' }).click()]);
  return JSON.parse(readFileSync(await dl.path(), 'utf8'));
}

interface Agent {
  bind: string;
  kernel: string;
  proto: 'tcp' | 'udp';
  listeners: number;
  closed?: string;
  secret: string;
  inner?: string;
}

/** `reuseport-agent predict` on `input`: `line client server listener` per answered connection. */
function predict(input: string, a: Agent): string[] {
  const args = ['predict', '--kernel', a.kernel, '--proto', a.proto, '--listeners', String(a.listeners), '--secret', a.secret, '--bind', a.bind];
  if (a.inner) args.push('--inner-secret', a.inner);
  if (a.closed) args.push('--closed', a.closed);
  let out: string;
  try {
    out = execFileSync(AGENT, args, { input, encoding: 'utf8', stdio: ['pipe', 'pipe', 'pipe'] });
  } catch (e) {
    // Exit status 1: some lines were unusable; the answered ones are on stdout all the same.
    const err = e as { status?: number; stdout?: string; stderr?: string };
    if (err.status !== 1) throw new Error(`reuseport-agent ${args.join(' ')} failed: ${err.stderr}`);
    out = err.stdout ?? '';
  }
  return out
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as { line: number; tuple?: string; listener?: number | null })
    .filter((v) => v.tuple !== undefined)
    .map((v) => `${v.line} ${v.tuple} ${v.listener}`)
    .sort();
}

const rowKeys = (rows: ExportRow[]) => rows.map((r) => `${r.line} ${r.client} ${r.server} ${r.listener}`).sort();
const pairsOf = (rows: ExportRow[]) => rows.map((r) => `${r.client} ${r.server}`).sort();

// ---- 1. the page answers as reuseport-agent predict --------------------------------

interface Case {
  name: string;
  text: string;
  /** Given to the agent; the page gets the same under "Listening on" unless pageBind says otherwise. */
  agent: Agent;
  pageBind?: string;
  /** The input the agent reads, when the page's is not in a form the agent orients (server-first pairs). */
  agentText?: string;
  /** The connections to the group, from the fixture README (client server). */
  want: string[];
}

const V4_18080 = ['127.0.0.1:41001', '127.0.0.1:41002', '127.0.0.1:41003', '127.0.0.2:41004'].map((c) => `${c} 127.0.0.1:18080`);
const V6_18081 = ['[::1]:41011 [::1]:18081', '[::1]:41012 [::1]:18081'];
const tcp = (bind: string, kernel: string, listeners: number, extra: Partial<Agent> = {}): Agent => ({
  bind,
  kernel,
  proto: 'tcp',
  listeners,
  secret: SECRET,
  ...extra,
});

const CSV = [
  'proto,saddr,sport,daddr,dport',
  'tcp,192.0.2.10,50001,10.0.0.1,443',
  'tcp,192.0.2.11,50002,10.0.0.1,443',
  'tcp,198.51.100.7,61000,10.0.0.1,443',
  'tcp,192.0.2.10,50001,10.0.0.1,443',
  'tcp,192.0.2.12,50003,10.0.0.1,8443',
  '',
].join('\n');

// Written server first: only the port shared by every line says which side is the server.
const SERVER_FIRST = ['127.0.0.1:18080 127.0.0.2:41004', '127.0.0.1:18080 127.0.0.1:41001', '127.0.0.1:18080 127.0.0.1:41002', ''].join('\n');
const CLIENT_FIRST = ['127.0.0.2:41004 127.0.0.1:18080', '127.0.0.1:41001 127.0.0.1:18080', '127.0.0.1:41002 127.0.0.1:18080', ''].join('\n');

const CASES: Case[] = [
  { name: 'ss -tn', text: fixture('ss-tn.txt'), agent: tcp('127.0.0.1:18080', '6.18', 8), want: V4_18080 },
  // The dual-stack server [::]:18082: its IPv4-mapped side is an IPv4 connection.
  {
    name: 'ss -tn, dual-stack wildcard group',
    text: fixture('ss-tn.txt'),
    agent: tcp('[::]:18082', '5.10', 5, { inner: INNER }),
    want: ['127.0.0.1:41021 127.0.0.1:18082'],
  },
  { name: 'ss -tan', text: fixture('ss-tan.txt'), agent: tcp('127.0.0.1:18080', '4.19', 6, { closed: '2' }), want: V4_18080 },
  { name: 'ss -tnp', text: fixture('ss-tnp.txt'), agent: tcp('[::1]:18081', '6.18', 8, { inner: INNER }), want: V6_18081 },
  { name: 'ss -tne', text: fixture('ss-tne.txt'), agent: tcp('127.0.0.1:18080', '5.4', 16), want: V4_18080 },
  { name: 'netstat -tn', text: fixture('netstat-tn.txt'), agent: tcp('[::1]:18081', '4.4', 3, { inner: INNER }), want: V6_18081 },
  {
    name: 'netstat -tun, the UDP group',
    text: fixture('netstat-tun.txt'),
    agent: { bind: '127.0.0.1:15353', kernel: '6.18', proto: 'udp', listeners: 4, secret: SECRET },
    want: ['127.0.0.1:41031 127.0.0.1:15353'],
  },
  { name: '/proc/net/tcp', text: fixture('proc-net-tcp.txt'), agent: tcp('127.0.0.1:18080', '6.1', 8), want: V4_18080 },
  { name: '/proc/net/tcp6', text: fixture('proc-net-tcp6.txt'), agent: tcp('[::1]:18081', '6.18', 8, { inner: INNER }), want: V6_18081 },
  { name: 'tcpdump -nn', text: fixture('tcpdump-nn.txt'), agent: tcp('[::1]:8080', '6.18', 8, { inner: INNER }), want: ['[::1]:42002 [::1]:8080'] },
  {
    name: 'conntrack -L',
    text: fixture('conntrack-L.txt'),
    agent: tcp('10.0.0.1:80', '6.18', 8),
    want: ['10.0.0.2:51234 10.0.0.1:80', '10.0.0.3:51235 10.0.0.1:80', '192.168.2.100:34846 10.0.0.1:80'],
  },
  {
    name: 'CSV with a header',
    text: CSV,
    agent: tcp('10.0.0.1:443', '6.18', 8),
    want: ['192.0.2.10:50001 10.0.0.1:443', '192.0.2.11:50002 10.0.0.1:443', '198.51.100.7:61000 10.0.0.1:443'],
  },
  {
    name: 'pairs written server first, oriented by the common port',
    text: SERVER_FIRST,
    pageBind: '',
    agentText: CLIENT_FIRST,
    agent: tcp('127.0.0.1:18080', '6.18', 8),
    want: ['127.0.0.2:41004 127.0.0.1:18080', '127.0.0.1:41001 127.0.0.1:18080', '127.0.0.1:41002 127.0.0.1:18080'],
  },
];

for (const c of CASES) {
  test(`${c.name}: under a typed secret the page answers each connection as reuseport-agent predict`, async ({ page }) => {
    const w = await open(page);
    const a = c.agent;
    await fill(w, {
      text: c.text,
      bind: c.pageBind ?? a.bind,
      kernel: a.kernel,
      proto: a.proto,
      listeners: a.listeners,
      closed: a.closed,
      mode: 'typed',
      secret: a.secret,
      inner: a.inner ?? '',
    });
    await analyse(page);
    const { rows } = await exported(page);
    const want = predict(c.agentText ?? c.text, a);
    // The capture's own list says which connections these are; the agent says the listeners.
    expect(pairsOf(rows), 'the connections to the group, each once').toEqual([...c.want].sort());
    expect(want.map((k) => k.split(' ').slice(1, 3).join(' ')).sort(), 'the agent read the same connections').toEqual([...c.want].sort());
    expect(rowKeys(rows)).toEqual(want);
  });
}

// ---- 2. the side decision, and Flip ----------------------------------------------

test('server-first pairs are oriented by the port common to every line, the page says so, and Flip swaps the sides in the export', async ({ page }) => {
  const w = await open(page);
  await fill(w, { text: SERVER_FIRST, mode: 'typed', secret: SECRET });
  await analyse(page);
  const read = w.locator('section', { has: page.getByRole('heading', { name: 'What was read' }) });
  await expect(read).toContainText('port 18080, common to every line');
  expect(pairsOf((await exported(page)).rows)).toEqual(CASES.at(-1)!.want.slice().sort());

  await runs(page, read.getByRole('button', { name: 'Flip client and server' }));
  await expect(read).toContainText('then flipped by you');
  const flipped = (await exported(page)).rows;
  expect(pairsOf(flipped)).toEqual(['127.0.0.1:18080 127.0.0.2:41004', '127.0.0.1:18080 127.0.0.1:41001', '127.0.0.1:18080 127.0.0.1:41002'].sort());
  expect(flipped.map((r) => r.line).sort()).toEqual([1, 2, 3]);
});

// ---- 3. undecided lines ------------------------------------------------------------

/**
 * The rows of the "Unusable lines" table as text cells (line, format, why, text); opens it first. The table shows
 * them as line, text, why, format: the line's own text was last, scrolled out of view behind a long reason, so the
 * helper also checks that the text cell starts inside the table's visible box.
 */
async function unusable(w: Locator, count: number): Promise<string[][]> {
  const det = w.locator('details', { has: w.page().locator('summary', { hasText: 'Unusable lines' }) });
  await expect(det.locator('summary')).toHaveText(`Unusable lines: ${count.toLocaleString('en-US')}`);
  if ((await det.getAttribute('open')) === null) await det.locator('summary').click();
  const rows = det.locator('tbody tr');
  await expect(rows).toHaveCount(count);
  await expect(det.locator('thead th').nth(1)).toHaveText('text');
  const box = (await det.locator('.rl-vt').boundingBox())!;
  const text = (await rows.first().locator('td').nth(1).boundingBox())!;
  expect(text.x, "the first line's text starts inside the visible box").toBeLessThan(box.x + box.width - 40);
  const cells = await rows.evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent ?? '')));
  return cells.map(([line = '', t = '', why = '', format = '']) => [line, format, why, t]);
}

test('a line whose sides cannot be decided is listed under Unusable lines with its number, not answered', async ({ page }) => {
  const w = await open(page);
  const text = [
    '127.0.0.5:40001 127.0.0.1:18080',
    '127.0.0.6:40002 127.0.0.1:18080',
    // Neither end is the listening port: not a connection to this group.
    '127.0.0.7:40003 127.0.0.1:9999',
    // Both ends are the listening address and port: nothing says which one is the client.
    '127.0.0.1:18080 127.0.0.1:18080',
    '127.0.0.8:40004 127.0.0.1:18080',
  ].join('\n');
  await fill(w, { text, bind: '127.0.0.1:18080', mode: 'typed', secret: SECRET });
  await analyse(page);
  const bad = await unusable(w, 2);
  expect(bad.map((r) => r[0])).toEqual(['3', '4']);
  expect(bad[0]![3]!).toContain('127.0.0.7:40003');
  // The format in the reader's words, not the parser's id (`pairs`).
  expect(bad[0]![1]!).toBe('the address-pair format');
  expect(bad[0]![2]!).toContain('18080');
  expect(bad[1]![2]!).toContain('18080');
  const { rows } = await exported(page);
  expect(rows.map((r) => r.line).sort()).toEqual([1, 2, 5]);
  expect(pairsOf(rows)).toEqual(['127.0.0.5:40001 127.0.0.1:18080', '127.0.0.6:40002 127.0.0.1:18080', '127.0.0.8:40004 127.0.0.1:18080']);
});

// ---- 3b. output as people paste it --------------------------------------------

test('conntrack DNAT rows are answered for the translated tuple with a note, and a UDP row under TCP is refused by name', async ({ page }) => {
  // conntrack-dnat.txt (hand-written, README there): lines 1, 2, 3 and 5
  // are translated (a Service's DNS, a Service to a pod's 8443, a Docker
  // published port, an SNAT); line 1 is UDP.
  const w = await open(page);
  await fill(w, { text: fixture('conntrack-dnat.txt'), proto: 'tcp', listeners: 4, mode: 'none' });
  await analyse(page);
  await expect(w.getByText(/6 of the first 6 lines read as conntrack -L output, 5 of them sockets/)).toBeVisible();
  const notes = w.locator('details', { has: page.locator('summary', { hasText: 'Read with a note' }) });
  await expect(notes.locator('summary')).toHaveText('Read with a note: 4');
  const cells = await notes.locator('tbody tr').evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent ?? '')));
  expect(cells.map((r) => r[0])).toEqual(['1', '2', '3', '5']);
  expect(cells[1]![1]!).toContain('the client connected to 10.96.12.7:443');
  const { rows } = await exported(page);
  expect(pairsOf(rows)).toContain('10.0.0.9:51234 10.244.2.9:8443');
  expect(pairsOf(rows)).not.toContain('10.0.0.9:51234 10.96.12.7:443');
  await expect(w.getByText(/1 connection not answered: the line shows a udp connection/)).toBeVisible();
});

test('netstat without -W: a cut IPv6 column is refused naming netstat -W, never read as a shorter address', async ({ page }) => {
  // netstat-tn-cut.txt: captured in a network namespace; every address
  // field of its six connections fills the 23-character column.
  const w = await open(page);
  await fill(w, { text: fixture('netstat-tn-cut.txt'), mode: 'none' });
  await analyse(page);
  const bad = await unusable(w, 6);
  expect(bad.map((r) => r[0])).toEqual(['3', '4', '5', '6', '7', '8']);
  for (const r of bad) expect(r[2]!).toContain('run netstat -W (wide) or ss -tn');
  expect(bad[2]![2]!).toContain('fe80::230:18ff:fe:52001');
});

// ---- 4. without a secret; a random boot ---------------------------------------------

test(
  'without a secret no row names a listener and the spread over every secret is shown; a random boot is labelled an example and answers as the agent ' +
    'under its key',
  async ({ page }) => {
    const w = await open(page);
    await fill(w, { text: fixture('ss-tn.txt'), bind: '127.0.0.1:18080', kernel: '6.18', proto: 'tcp', listeners: 8, mode: 'none' });
    await analyse(page);
    const none = await exported(page);
    expect(pairsOf(none.rows)).toEqual([...V4_18080].sort());
    expect(none.rows.map((r) => r.listener)).toEqual([null, null, null, null]);
    await expect(w.getByText('Without a named secret the table lists no listener per connection')).toBeVisible();

    const spread = w.locator('section', { has: page.getByRole('heading', { name: 'What holds for every secret' }) });
    await expect(spread).toContainText('these 4 connections spread over 8 listeners');
    for (const term of ['Busiest ÷ quietest listener', 'Jain’s fairness index (1 is even)', 'Listeners left empty', 'Share of the busiest listener']) {
      const dd = spread.locator('dt', { hasText: term }).locator('xpath=following-sibling::dd[1]');
      await expect(dd, `${term} has a figure`).toHaveText(/\d/);
    }

    await w.getByRole('radio', { name: RADIO.random }).check();
    await expect(w.getByRole('status').first()).toContainText('an example, not your server');
    const key = await w.getByLabel('IPv4 key').inputValue();
    expect(key).toMatch(/^0x[0-9a-f]{8}$/);
    await expect(w.getByRole('status').first()).toContainText(key);
    const random = await exported(page);
    expect(rowKeys(random.rows)).toEqual(predict(fixture('ss-tn.txt'), tcp('127.0.0.1:18080', '6.18', 8, { secret: key })));
  },
);

// ---- 5. recovering the secret --------------------------------------------------------

test('the key searched in the page from an agent trace is the one reuseport-agent recover finds', async ({ page }) => {
  test.setTimeout(600_000);
  const trace = JSON.parse(readFileSync(TRACE, 'utf8')) as { kernel: { profile: string }; group: { listeners: number } };
  const w = await open(page);
  await w.getByLabel('Or a file:').setInputFiles(TRACE);
  await analyse(page);
  // The form takes the trace's own group.
  await expect(w.getByLabel('Kernel', { exact: true })).toHaveValue(trace.kernel.profile);
  await expect(w.getByLabel('Listeners in the group')).toHaveValue(String(trace.group.listeners));

  await w.getByRole('button', { name: 'Search every key' }).click();
  const first = w.locator('.rl-candidates li').first();
  await expect(first).toHaveText(/^0x[0-9a-f]{8}$/, { timeout: 120_000 });
  const found = (await first.textContent())!.trim();

  // The release build (tests/agent.ts): a debug one searches 2^32 keys in minutes.
  const report = JSON.parse(execFileSync(AGENT, ['recover', TRACE], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })) as {
    secret: string | null;
    candidates: number;
  };
  expect(report.candidates).toBe(1);
  expect(found).toBe(report.secret);
  await expect(w.locator('.rl-candidates li')).toHaveCount(1);

  // Under that key every observation in the trace lands where it was observed.
  await w.getByRole('button', { name: `Answer under ${found}` }).click();
  await expect(w.getByRole('status').first()).toContainText('0 differ from the listener observed');
});

// ---- 6. hostile input ----------------------------------------------------------------

test('markup, bidi and byte-order marks and a 10,000-character line are listed as unusable lines, escaped and cut, and run nothing', async ({ page }) => {
  const dialogs: string[] = [];
  page.on('dialog', (d) => {
    dialogs.push(d.message());
    void d.dismiss();
  });
  const w = await open(page);
  const long = 'A'.repeat(10_000);
  const text = [
    '127.0.0.5:40001 127.0.0.1:18080',
    '127.0.0.6:40002 127.0.0.1:18080',
    '<img src=x onerror=alert(1)>',
    '\uFEFFgnp.\u202Eexe.txt 10.0.0.1:80',
    long,
    '',
  ].join('\n');
  await fill(w, { text, bind: '127.0.0.1:18080', mode: 'typed', secret: SECRET });
  await analyse(page);
  const bad = await unusable(w, 3);
  expect(bad.map((r) => r[0])).toEqual(['3', '4', '5']);
  // Markup is shown as its text.
  expect(bad[0]![3]!).toBe('<img src=x onerror=alert(1)>');
  // Invisible and reordering characters are written out, not obeyed.
  expect(bad[1]![3]!).not.toMatch(/[\uFEFF\u202E]/);
  expect(bad[1]![3]!.toLowerCase()).toContain('202e');
  expect(bad[1]![3]!.toLowerCase()).toContain('feff');
  expect(bad[1]![3]!).toContain('exe.txt 10.0.0.1:80');
  // The long line is cut.
  expect(bad[2]![3]!.length).toBeLessThan(1000);
  expect(bad[2]![3]!).toMatch(/^A+…$/);
  for (const r of bad) expect(r[2]!.trim(), `line ${r[0]} says why`).not.toBe('');

  expect(pairsOf((await exported(page)).rows)).toEqual(['127.0.0.5:40001 127.0.0.1:18080', '127.0.0.6:40002 127.0.0.1:18080']);
  await expect(w.locator('img')).toHaveCount(0);
  await expect(page.locator('img[src="x"]')).toHaveCount(0);
  expect(dialogs).toEqual([]);
});

// ---- 7. a bad URL ---------------------------------------------------------------------

test('bad URL parameters are named and ignored, and the page still answers', async ({ page }) => {
  const w = await open(page, './lookup/?listeners=-1&proto=sctp');
  const alert = w.getByRole('alert');
  await expect(alert).toContainText('listeners=-1');
  await expect(alert).toContainText('proto=sctp');
  // The element's own settings stand.
  await expect(w.getByLabel('Listeners in the group')).toHaveValue('8');
  await expect(w.getByLabel('Protocol')).toHaveValue('tcp');
  await fill(w, { text: fixture('ss-tn.txt'), bind: '127.0.0.1:18080', mode: 'typed', secret: SECRET });
  await analyse(page);
  const { rows } = await exported(page);
  expect(rowKeys(rows)).toEqual(predict(fixture('ss-tn.txt'), tcp('127.0.0.1:18080', '6.18', 8)));
});

// ---- 8. Stop ----------------------------------------------------------------------------

/** Distinct pairs to 10.0.0.1:8080, some 35 bytes a line. */
function bigPairs(n: number): string {
  const lines: string[] = [];
  for (let i = 0; i < n; i++) lines.push(`10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}:${1024 + (i % 60_000)} 10.0.0.1:8080`);
  return lines.join('\n') + '\n';
}

/**
 * Clicks Analyse, and Stop as soon as the page reports reading progress
 * (from inside the page: a poll from the test could see the first report
 * only after the read is over). The inputs are large enough that reading
 * them takes many times longer than one progress report, so the stop lands
 * while reading.
 */
async function analyseAndStop(page: Page, total: number) {
  const w = paste(page);
  await w.evaluate((host) => {
    // The widget lives in the element's shadow root.
    const el = host.shadowRoot ?? host;
    const status = el.querySelector('[role=status]')!;
    const stop = [...el.querySelectorAll('form button')].find((b) => b.textContent === 'Stop') as HTMLButtonElement;
    const mo = new MutationObserver(() => {
      if (!status.textContent?.startsWith('Reading:')) return;
      mo.disconnect();
      stop.click();
    });
    mo.observe(status, { childList: true, characterData: true, subtree: true });
  });
  await w.getByRole('button', { name: 'Analyse' }).click();
  await expect(w).toHaveAttribute('data-state', 'ready', { timeout: 120_000 });
  const read = w.locator('section', { has: page.getByRole('heading', { name: 'What was read' }) });
  const counts =
    (await read
      .locator('dt', { hasText: /^Lines$/ })
      .locator('xpath=following-sibling::dd[1]')
      .textContent()) ?? '';
  const m = /^([\d,]+) read: ([\d,]+) connections answered/.exec(counts);
  expect(m, counts).not.toBeNull();
  const linesRead = Number(m![1]!.replaceAll(',', ''));
  const answered = Number(m![2]!.replaceAll(',', ''));
  expect(linesRead, `lines read of ${total}`).toBeLessThan(total);
  expect(linesRead).toBeGreaterThan(0);
  expect(answered).toBeLessThan(total);
  await expect(w.getByText('Stopped early: only the lines read so far are used.')).toBeVisible();
  expect((await exported(page)).rows.length).toBe(answered);
}

test('Stop while a large file is read ends with the lines read so far, said to be partial', async ({ page }, info) => {
  test.setTimeout(180_000);
  const path = info.outputPath('pairs.txt');
  // About 35 MB: over a second of reading. (A text box this large stalls the page's own
  // thread, so the same test on pasted text could not say when its Stop is sent.)
  const total = 1_000_000;
  writeFileSync(path, bigPairs(total));
  const w = await open(page);
  await fill(w, { text: '', bind: '10.0.0.1:8080', mode: 'none' });
  await w.getByLabel('Or a file:').setInputFiles(path);
  await analyseAndStop(page, total);
});

// ---- 9. accessibility -------------------------------------------------------------------

test('the paste analyser has no axe violations with its results shown', async ({ page }) => {
  const w = await open(page);
  await fill(w, { text: fixture('ss-tn.txt'), bind: '127.0.0.1:18080', mode: 'typed', secret: SECRET });
  await analyse(page);
  // Every disclosure open: the unusable lines, the per-listener counts.
  const closed = w.locator('details:not([open]) > summary');
  await expect(closed.first()).toBeVisible();
  while ((await closed.count()) > 0) await closed.first().click();
  await w
    .getByRole('button', { name: /^Explain line / })
    .first()
    .click();
  await expect(w.getByRole('heading', { name: /^Line \d+ under your secret/ })).toBeVisible();
  const results = await axe(page).include('reuseport-paste').analyze();
  expect(results.violations).toEqual([]);
});

test('the analyser works from the keyboard alone: typed input, Analyse by Enter, Explain by keyboard, focus on the record', async ({ page }) => {
  const w = await open(page);
  await fill(w, { text: '', bind: '', mode: 'typed', secret: SECRET });
  // One pair line says nothing about which side listens: the listening port does.
  await w.getByLabel('Listening on').fill(':8080');
  const box = w.getByLabel('Connections', { exact: true });
  await box.focus();
  await page.keyboard.type('127.0.0.9 40000 127.0.0.1 8080');
  // Enter in a one-line field submits the form, as a mouse click on Analyse would.
  await w.getByLabel('Listening on').focus();
  const before = await completedCount(page);
  await page.keyboard.press('Enter');
  await expect.poll(() => completedCount(page)).toBe(before + 1);
  await expect(w.getByRole('status')).toContainText('1 connection answered');
  // Tab from the search field reaches the row's Explain button.
  await w.getByLabel('Search').focus();
  const explain = w.getByRole('button', { name: 'Explain line 1' });
  for (let i = 0; i < 10 && !(await explain.evaluate((b) => b === (b.getRootNode() as Document | ShadowRoot).activeElement)); i++)
    await page.keyboard.press('Tab');
  await expect(explain).toBeFocused();
  await page.keyboard.press('Enter');
  await expect(w.getByRole('heading', { name: /^Line 1 under your secret/ })).toBeFocused();
});
