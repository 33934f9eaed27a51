/**
 * `<reuseport-exercise>` on the hash and bind-rules chapters. The expected
 * answers come from the native agent (`reuseport-agent predict`), run here on
 * the inputs the page shows: never from the widget's own code.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import { axe } from './axe';
import { expect, test, type Locator, type Page } from '@playwright/test';
import { AGENT } from '../agent';

const dir = mkdtempSync(join(tmpdir(), 'rl-exercise-e2e-'));
let layouts = 0;

interface Seen {
  type: string;
  kind: string | null;
  detail: Record<string, unknown>;
}

/** Records every exercise event the page sends, from before its scripts run. */
async function recordEvents(page: Page): Promise<void> {
  await page.addInitScript(() => {
    const w = window as unknown as { __rlEvents: unknown[] };
    w.__rlEvents = [];
    for (const type of ['started', 'answered', 'completed', 'error']) {
      document.addEventListener(`reuseport:${type}`, (e) => {
        const el = e.target as Element;
        if (el.localName === 'reuseport-exercise') w.__rlEvents.push({ type, kind: el.getAttribute('kind'), detail: (e as CustomEvent).detail });
      });
    }
  });
}

const events = (page: Page) => page.evaluate(() => (window as unknown as { __rlEvents: Seen[] }).__rlEvents);

async function open(page: Page, path: string): Promise<Locator> {
  await recordEvents(page);
  await page.goto(path);
  const w = page.locator('reuseport-exercise');
  await w.scrollIntoViewIfNeeded();
  await expect(w).toHaveAttribute('data-state', 'ready', { timeout: 20_000 });
  return w;
}

/** The agent's listener for the SYN question the page shows. */
async function agentSyn(w: Locator): Promise<number> {
  const lead = (await w.locator('.rl-ex-lead').textContent()) ?? '';
  const g = /^(\d+) TCP listeners with SO_REUSEPORT, bound to (\S+):(\d+), kernel ([\d.]+)\.$/.exec(lead);
  expect(g, `group sentence: ${lead}`).not.toBeNull();
  const [, listeners, bind, port, kernel] = g!;
  const facts = (await w.locator('.rl-ex-facts').textContent()) ?? '';
  const secret = /0x[0-9a-f]{8}/.exec(facts)?.[0];
  const syn = /(\d+\.\d+\.\d+\.\d+):(\d+) → (\d+\.\d+\.\d+\.\d+):(\d+)/.exec(facts);
  expect(secret && syn, `facts: ${facts}`).toBeTruthy();
  const args = ['predict', '--kernel', kernel!, '--proto', 'tcp', '--listeners', listeners!, '--secret', secret!, '--bind', `${bind}:${port}`];
  const note = await w.locator('.rl-ex-note').allTextContents();
  const closed = note.map((n) => /^Closed before the SYN: (.*)\.$/.exec(n)?.[1]).find((x) => x !== undefined);
  if (closed) args.push('--closed', [...closed.matchAll(/\d+/g)].map((m) => m[0]).join(','));
  const out = execFileSync(AGENT, args, { input: `${syn![1]} ${syn![2]} ${syn![3]} ${syn![4]}\n`, encoding: 'utf8' });
  return (JSON.parse(out) as { listener: number }).listener;
}

const STATES: Record<string, string> = { listening: 'listen', bound: 'bound', TIME_WAIT: 'time_wait' };

/** The agent's answer to the new bind() of the question the page shows: the socket list written as the calls a program makes. */
async function agentBind(w: Locator): Promise<{ outcome: string; rule: string | null; with: number | null }> {
  const items = await w.locator('.rl-ex-sock').evaluateAll((lis) => lis.map((li) => [...li.querySelectorAll('.rl-ex-chip')].map((c) => c.textContent ?? '')));
  const calls: Record<string, unknown>[] = [];
  items.forEach((chips, i) => {
    const m = /^(TCP|UDP) \[?([^\]]+?)\]?:(\d+)$/.exec(chips[0]!);
    expect(m, `socket ${i}: ${chips.join(' | ')}`).not.toBeNull();
    const fresh = i === items.length - 1;
    const state = fresh ? 'bound' : STATES[chips.find((c) => c in STATES) ?? ''];
    expect(state, `socket ${i} state: ${chips.join(' | ')}`).toBeDefined();
    const family = chips.some((c) => c.startsWith('IPv6')) ? 'inet6' : 'inet';
    const proto = m![1]!.toLowerCase();
    calls.push({ call: 'socket', family, proto, uid: Number(/^UID (\d+)$/.exec(chips.find((c) => c.startsWith('UID ')) ?? '')?.[1]) });
    if (chips.includes('SO_REUSEADDR on')) calls.push({ call: 'setsockopt', fd: i, opt: { reuseaddr: true } });
    if (chips.includes('SO_REUSEPORT on')) calls.push({ call: 'setsockopt', fd: i, opt: { reuseport: true } });
    if (chips.some((c) => c.includes('IPV6_V6ONLY'))) calls.push({ call: 'setsockopt', fd: i, opt: { v6only: true } });
    calls.push({ call: 'bind', fd: i, addr: m![2], port: Number(m![3]) });
    if (proto === 'tcp' && state === 'listen') calls.push({ call: 'listen', fd: i });
    // TIME_WAIT: an established connection (to any peer; here loopback's discard port), then close().
    if (state === 'time_wait') calls.push({ call: 'connect', fd: i, addr: family === 'inet6' ? '::1' : '127.0.0.1', port: 9 }, { call: 'close', fd: i });
  });
  const kernel = /kernel ([\d.]+)\)/.exec((await w.locator('.rl-ex-lead').textContent()) ?? '')?.[1];
  const file = join(dir, `layout-${layouts++}.json`);
  writeFileSync(file, JSON.stringify({ calls }));
  const out = execFileSync(AGENT, ['predict', '--kernel', kernel!, '--layout', file], { input: '', encoding: 'utf8' });
  // The first line's `answers`: each call's answer, null for ok; the new bind() is the last call.
  type Answer = { errno: string; rule: string; with: number | null } | null;
  const answers = (JSON.parse(out.split('\n')[0]!) as { answers: Answer[] }).answers;
  // The calls before it all succeeded: only the new bind() is in question.
  expect(answers.slice(0, -1)).toEqual(answers.slice(0, -1).map(() => null));
  const last = answers[answers.length - 1] ?? null;
  return { outcome: last?.errno ?? 'success', rule: last?.rule ?? null, with: last?.with ?? null };
}

/** The simulator, run here in the test's own process: each variant's accepts per worker for a curated workload and seed. */
async function simulateHere(scenario: string, seed: number): Promise<Map<string, string>> {
  const pkg = (await import('../../src/model/pkg-lookup/reuseport.js')) as typeof import('../../src/model/pkg-lookup/reuseport.js');
  pkg.initSync({ module: readFileSync('src/model/pkg-lookup/reuseport_bg.wasm') });
  const view = pkg.curatedScenarios().find((c) => c.name === scenario);
  expect(view, `curated scenario ${scenario}`).toBeDefined();
  const out = new Map<string, string>();
  view!.variants.forEach((v, i) => {
    const sim = new pkg.Simulation({ ...view!.scenarios[i]!, seed });
    while (!sim.step(1_000_000));
    out.set(
      v.id,
      sim
        .report()
        .workers.map((w) => String(w.accepts))
        .join(','),
    );
    sim.free();
  });
  return out;
}

const BIND_LABEL: Record<string, RegExp> = { success: /^bind\(\) succeeds/, EADDRINUSE: /^EADDRINUSE/, EINVAL: /^EINVAL/, ENOMEM: /^ENOMEM/ };

test('syn: answering every question as reuseport-agent predicts scores 5 of 5, with the events a trainer needs', async ({ page }) => {
  const w = await open(page, './hash/');
  const choices = w.getByRole('group', { name: 'Which listener will this SYN reach?' });
  const want: number[] = [];
  for (let i = 0; i < 5; i++) {
    await expect(w.locator('.rl-ex-progress')).toHaveText(`Question ${i + 1} of 5`);
    const listener = await agentSyn(w);
    want.push(listener);
    await choices.getByRole('button', { name: `Listener ${listener}`, exact: true }).click();
    await expect(w.getByRole('status')).toContainText(`Right: the SYN reaches listener ${listener}.`);
    await expect(w.locator('.rl-ex-score')).toHaveText(`Score: ${i + 1} of ${i + 1}`);
    // The model's explanation: its headline names the same listener.
    await expect(w.locator('.rl-ex-why .rl-headline')).toContainText(`listener ${listener}`);
    await w.getByRole('button', { name: i < 4 ? 'Next question' : 'See your score' }).click();
  }
  await expect(w.locator('.rl-ex-final')).toHaveText('You answered 5 of 5 correctly.');
  await expect(w.locator('.rl-ex-final')).toBeFocused();
  const ev = await events(page);
  expect(ev.filter((e) => e.type === 'started')).toEqual([{ type: 'started', kind: 'syn', detail: { kind: 'syn', kernel: '6.18', seed: 1, count: 5 } }]);
  expect(ev.filter((e) => e.type === 'answered').map((e) => e.detail)).toEqual(
    want.map((l, i) => ({ kind: 'syn', question: i, choice: l, correct: true, expected: l, hinted: false })),
  );
  expect(ev.filter((e) => e.type === 'completed').map((e) => e.detail)).toEqual([{ kind: 'syn', seed: 1, score: 5, total: 5 }]);
  expect(ev.filter((e) => e.type === 'error')).toEqual([]);
});

test('syn, keyboard only: a wrong answer is marked, the right one shown, focus moves on, and the score counts only right answers', async ({ page }) => {
  const w = await open(page, './hash/');
  // Enter the widget at its first control; from there on only keys.
  await w.getByRole('button', { name: 'Show a hint' }).focus();
  await page.keyboard.press('Enter');
  await expect(w.getByRole('button', { name: 'Hide the hint' })).toHaveAttribute('aria-expanded', 'true');
  await expect(w.locator('.rl-ex-hint')).toContainText(/The model hashes this SYN to 0x[0-9a-f]{8}/);
  const right: boolean[] = [];
  for (let i = 0; i < 5; i++) {
    const listener = await agentSyn(w);
    const buttons = w.locator('.rl-ex-choice');
    const names = await buttons.allTextContents();
    // Question 0 wrong on purpose, the others right.
    const target = i === 0 ? names.findIndex((n) => n !== `Listener ${listener}`) : names.indexOf(`Listener ${listener}`);
    right.push(i !== 0);
    // From the question, Tab reaches the hint toggle, then the first choice.
    if (i > 0) {
      await page.keyboard.press('Tab');
      await expect(w.getByRole('button', { name: 'Show a hint' })).toBeFocused();
    }
    await page.keyboard.press('Tab');
    await expect(buttons.first()).toBeFocused();
    for (let k = 0; k < target; k++) await page.keyboard.press('Tab');
    await expect(buttons.nth(target)).toBeFocused();
    await page.keyboard.press('Enter');
    const next = w.getByRole('button', { name: i < 4 ? 'Next question' : 'See your score' });
    await expect(next).toBeFocused();
    if (i === 0) {
      await expect(w.getByRole('status')).toContainText(`Not quite: you chose ${names[target]!.toLowerCase()}; the SYN reaches listener ${listener}.`);
      await expect(buttons.nth(target)).toContainText('your answer');
      await expect(w.getByRole('button', { name: `Listener ${listener} ✓ the right answer` })).toBeVisible();
      await expect(w.locator('.rl-ex-score')).toHaveText('Score: 0 of 1');
    }
    await page.keyboard.press('Enter');
    if (i < 4) await expect(w.locator('.rl-ex-ask')).toBeFocused();
  }
  await expect(w.locator('.rl-ex-final')).toBeFocused();
  await expect(w.locator('.rl-ex-final')).toHaveText('You answered 4 of 5 correctly.');
  const ev = await events(page);
  const answered = ev.filter((e) => e.type === 'answered').map((e) => e.detail);
  expect(answered.map((d) => d.correct)).toEqual(right);
  expect(answered[0]!.hinted).toBe(true);
  expect(answered[0]!.choice).not.toBe(answered[0]!.expected);
  expect(ev.filter((e) => e.type === 'completed').map((e) => e.detail)).toEqual([{ kind: 'syn', seed: 1, score: 4, total: 5 }]);
  // Try again: the same questions from the start, score back to 0, a new started event.
  await page.keyboard.press('Tab');
  await expect(w.getByRole('button', { name: 'Try again' })).toBeFocused();
  await page.keyboard.press('Enter');
  await expect(w.locator('.rl-ex-progress')).toHaveText('Question 1 of 5');
  await expect(w.locator('.rl-ex-score')).toHaveText('Score: 0 of 0');
  await expect(w.locator('.rl-ex-ask')).toBeFocused();
  expect((await events(page)).filter((e) => e.type === 'started')).toHaveLength(2);
});

test('bind: each answer is reuseport-agent’s, with its rule and the conflicting socket; wrong answers are counted as wrong', async ({ page }) => {
  const w = await open(page, './bind-rules/');
  const choices = w.getByRole('group', { name: 'What will this bind() return?' });
  const outcomes: string[] = [];
  for (let i = 0; i < 5; i++) {
    const want = await agentBind(w);
    outcomes.push(want.outcome);
    // Odd questions wrong on purpose.
    const wrong = i % 2 === 1;
    const pick = wrong ? (want.outcome === 'success' ? 'EADDRINUSE' : 'success') : want.outcome;
    await choices.getByRole('button', { name: BIND_LABEL[pick] }).click();
    // A second press, on any choice, changes nothing: the first answer counts.
    await choices.getByRole('button', { name: BIND_LABEL[want.outcome] }).dispatchEvent('click');
    await expect(w.locator('.rl-ex-score')).toHaveText(`Score: ${Math.ceil((i + 1) / 2)} of ${i + 1}`);
    const status = w.getByRole('status');
    await expect(status).toContainText(wrong ? /^Not quite: you chose/ : /^Right: /);
    if (want.rule) {
      // The agent's rule sentence, as the model says it (the widget starts it with a capital).
      await expect(status).toContainText(want.rule.slice(1));
      if (want.with !== null) {
        await expect(status).toContainText(`It conflicts with socket ${want.with}.`);
        await expect(w.locator('.rl-ex-conflict')).toContainText(`Socket ${want.with}`);
      }
    } else await expect(status).toContainText('No bound socket refuses it');
    await w.getByRole('button', { name: i < 4 ? 'Next question' : 'See your score' }).click();
  }
  await expect(w.locator('.rl-ex-final')).toHaveText('You answered 3 of 5 correctly.');
  const ev = await events(page);
  expect(ev.filter((e) => e.type === 'answered').map((e) => [e.detail.question, e.detail.expected, e.detail.correct])).toEqual(
    outcomes.map((o, i) => [i, o, i % 2 === 0]),
  );
  expect(ev.filter((e) => e.type === 'completed').map((e) => e.detail)).toEqual([{ kind: 'bind', seed: 1, score: 3, total: 5 }]);
});

test('model: the histogram shown is the simulator’s run of the variant marked right, and every choice’s run is shown after the answer', async ({ page }) => {
  test.setTimeout(120_000);
  const w = await open(page, './scenarios/');
  const want: string[] = [];
  for (let i = 0; i < 5; i++) {
    await expect(w.locator('.rl-ex-progress')).toHaveText(`Question ${i + 1} of 5`);
    const seedNote = w.locator('.rl-ex-seed');
    await expect(seedNote).toBeVisible({ timeout: 30_000 });
    const scenario = (await seedNote.getAttribute('data-scenario'))!;
    const seed = Number(await seedNote.getAttribute('data-seed'));
    const shown = (await w.locator('.rl-ex-counts .rl-ex-count').allTextContents()).join(',');
    const choices = await w.locator('.rl-ex-choice').evaluateAll((bs) => bs.map((b) => (b as HTMLElement).dataset.choice!));
    const runs = await simulateHere(scenario, seed);
    // Exactly one choice's run is the histogram shown.
    const match = choices.filter((c) => runs.get(c) === shown);
    expect(match, `${scenario} seed ${seed}: ${shown}`).toHaveLength(1);
    want.push(match[0]!);
    // Question 2 (from 1) wrong on purpose.
    const pick = i === 1 ? choices.find((c) => c !== match[0])! : match[0]!;
    await w.locator(`.rl-ex-choice[data-choice="${pick}"]`).click();
    await expect(w.getByRole('status')).toContainText(i === 1 ? /^Not quite: you chose/ : /^Right: /);
    await expect(w.locator(`.rl-ex-choice[data-choice="${match[0]}"]`)).toContainText('the right answer');
    // Every choice's run of the same workload and seed, the shown one marked.
    await expect(w.locator('.rl-ex-compare-cell')).toHaveCount(choices.length);
    await expect(w.locator('.rl-ex-compare-cell.rl-ex-shown')).toHaveCount(1);
    await expect(w.locator('.rl-ex-compare-cell.rl-ex-shown')).toContainText('the run shown');
    await w.getByRole('button', { name: i < 4 ? 'Next question' : 'See your score' }).click();
  }
  await expect(w.locator('.rl-ex-final')).toHaveText('You answered 4 of 5 correctly.');
  const ev = await events(page);
  expect(ev.filter((e) => e.type === 'started').map((e) => e.detail)).toEqual([{ kind: 'model', kernel: '6.18', seed: 1, count: 5 }]);
  expect(ev.filter((e) => e.type === 'answered').map((e) => [e.detail.question, e.detail.expected, e.detail.correct])).toEqual(
    want.map((v, i) => [i, v, i !== 1]),
  );
  expect(ev.filter((e) => e.type === 'completed').map((e) => e.detail)).toEqual([{ kind: 'model', seed: 1, score: 4, total: 5 }]);
});

test('changing seed or count remounts with new questions; a bad kind says what is wrong', async ({ page }) => {
  const w = await open(page, './bind-rules/');
  const first = await w.locator('.rl-ex-socks').textContent();
  await w.evaluate((el) => {
    el.setAttribute('seed', '9');
    el.setAttribute('count', '2');
  });
  await expect(w.locator('.rl-ex-progress')).toHaveText('Question 1 of 2');
  await expect(w.locator('.rl-ex-socks')).not.toHaveText(first ?? '');
  const ev = await events(page);
  expect(ev.filter((e) => e.type === 'started').map((e) => e.detail)).toEqual([
    { kind: 'bind', kernel: '6.18', seed: 1, count: 5 },
    { kind: 'bind', kernel: '6.18', seed: 9, count: 2 },
  ]);
  await w.evaluate((el) => el.setAttribute('kind', 'quiz'));
  await expect(w.getByRole('alert')).toContainText('kind must be "syn", "bind" or "model", not "quiz"');
});

test('the Chinese chapter asks in Chinese and answers with the model’s Chinese rule', async ({ page }) => {
  const w = await open(page, './zh-cn/bind-rules/');
  await expect(w.locator('.rl-ex-ask')).toHaveText('这次 bind() 会返回什么？');
  await w.locator('.rl-ex-choice').first().click();
  await expect(w.getByRole('status')).toContainText(/^(答对了|答错了)/);
  await expect(w.getByRole('button', { name: '下一题' })).toBeFocused();
});

/** The widget stays inside the viewport, and nothing in it is wider than it (wide tables scroll in their own box). */
async function fits(w: Locator, width: number, when: string): Promise<void> {
  const box = await w.evaluate((el) => {
    const root = el.shadowRoot!.querySelector('.rl-root')!;
    return { right: el.getBoundingClientRect().right, scroll: root.scrollWidth, client: root.clientWidth };
  });
  expect(box.right, `${when}: the widget's right edge`).toBeLessThanOrEqual(width);
  expect(box.scroll, `${when}: the widget's content width`).toBeLessThanOrEqual(box.client);
}

for (const [width, height] of [
  [1440, 900],
  [390, 844],
] as const) {
  test(`axe finds no violations in the exercises at ${width} px, at rest, answered and scored`, async ({ page }) => {
    // Two pages, three axe scans each, on a shared machine.
    test.setTimeout(120_000);
    await page.setViewportSize({ width, height });
    for (const path of ['./hash/', './zh-cn/bind-rules/', './scenarios/']) {
      const w = await open(page, path);
      const scan = async (when: string) => {
        const r = await axe(page).include('reuseport-exercise').analyze();
        expect(r.violations.map((v) => `${path} ${when}: ${v.id} (${v.nodes[0]?.target.join(' ')})`)).toEqual([]);
        // The scan reached into the shadow root: the choice buttons were checked.
        expect(r.passes.find((p) => p.id === 'button-name')?.nodes.length ?? 0, `${path} ${when}: buttons scanned`).toBeGreaterThan(0);
      };
      await scan('at rest');
      await fits(w, width, `${path} at rest`);
      if (path === './hash/') await w.locator('.rl-ex-hint-toggle').click();
      await w.locator('.rl-ex-choice').first().click();
      await scan('answered');
      await fits(w, width, `${path} answered`);
      for (let i = 0; i < 4; i++) {
        await w.locator('.rl-ex-next').click();
        await w.locator('.rl-ex-choice').first().click();
      }
      await w.locator('.rl-ex-next').click();
      await expect(w.locator('.rl-ex-final')).toBeVisible();
      await scan('scored');
    }
  });
}
