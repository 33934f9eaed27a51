/**
 * The exercise widget's questions: seeded inputs, and answers that agree with
 * the native agent (`reuseport-agent predict`), which is run here on each
 * question's inputs: the expected answers never come from the widget's code.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AGENT, agentPresent } from '../agent';
import { bindQuestion, questions, synQuestion, type BindQuestion, type SynQuestion } from '../../src/islands/exercise';
import { EXERCISE_TEXT } from '../../src/islands/exercise-text';
import { loadLookupSync } from '../../src/model/lookup';
import { loadModelForTests } from './setup-model';

const haveAgent = agentPresent();
const lookupWasm = fileURLToPath(new URL('../../src/model/pkg-lookup/reuseport_bg.wasm', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'rl-exercise-'));

beforeAll(() => {
  loadModelForTests();
  loadLookupSync(readFileSync(lookupWasm));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const hex = (n: number) => `0x${n.toString(16).padStart(8, '0')}`;

/** The agent's answer for one SYN question's group and tuple. */
function agentSyn(q: SynQuestion): { listener: number | null; hash: string } {
  const args = [
    'predict',
    '--kernel',
    q.kernel,
    '--proto',
    'tcp',
    '--listeners',
    String(q.listeners),
    '--secret',
    hex(q.secret),
    '--bind',
    `${q.bind}:${q.port}`,
  ];
  if (q.closed.length) args.push('--closed', q.closed.join(','));
  const out = execFileSync(AGENT, args, { input: `${q.tuple.saddr} ${q.tuple.sport} ${q.tuple.daddr} ${q.tuple.dport}\n`, encoding: 'utf8' });
  return JSON.parse(out.trim()) as { listener: number | null; hash: string };
}

type AgentAnswer = { errno: string; rule: string; with: number | null } | null;

/** The agent's answer to each call of one bind question's call log, in call order (null for ok). */
function agentAnswers(q: BindQuestion, n: number): AgentAnswer[] {
  const file = join(dir, `layout-${n}.json`);
  writeFileSync(file, JSON.stringify(q.log));
  const out = execFileSync(AGENT, ['predict', '--kernel', q.kernel, '--layout', file], { input: '', encoding: 'utf8' });
  return (JSON.parse(out.trim().split('\n')[0]!) as { answers: AgentAnswer[] }).answers;
}

describe('exercise questions', () => {
  it('a seed gives the same questions every time, and another seed other questions', () => {
    const strip = (qs: ReturnType<typeof questions>) =>
      JSON.stringify(qs.map((q) => (q.kind === 'syn' ? [q.tuple, q.listeners, q.secret, q.closed, q.bind] : q.kind === 'bind' ? q.sockets : q.scenario)));
    expect(strip(questions('syn', 7, 5))).toBe(strip(questions('syn', 7, 5)));
    expect(strip(questions('bind', 7, 5))).toBe(strip(questions('bind', 7, 5)));
    expect(strip(questions('syn', 7, 5))).not.toBe(strip(questions('syn', 8, 5)));
    expect(strip(questions('bind', 7, 5))).not.toBe(strip(questions('bind', 8, 5)));
    // Question i does not depend on how many are asked.
    expect(strip(questions('syn', 7, 3))).toBe(strip(questions('syn', 7, 5).slice(0, 3)));
  });

  it('offers the expected answer among the choices, once', () => {
    for (let seed = 0; seed < 20; seed++) {
      const s = synQuestion(seed, 0);
      expect(s.choices.filter((c) => c === s.expected)).toHaveLength(1);
      const b = bindQuestion(seed, 0);
      expect(b.choices.filter((c) => c === b.expected)).toHaveLength(1);
    }
  });

  it('refuses an unknown kernel with the model’s message', () => {
    expect(() => synQuestion(1, 0, 'not-a-kernel')).toThrow(/kernel|profile|release/i);
    expect(() => bindQuestion(1, 0, 'not-a-kernel')).toThrow(/kernel|profile|release/i);
  });

  it('spreads the bind answers over success, EADDRINUSE and EINVAL', () => {
    const seen = new Set(questions('bind', 3, 20).map((q) => q.expected));
    expect([...seen].sort()).toEqual(['EADDRINUSE', 'EINVAL', 'success']);
  });
});

describe.skipIf(!haveAgent)('exercise answers agree with reuseport-agent predict', () => {
  it('SYN questions: the listener and the hash, on three kernel eras', () => {
    for (const kernel of ['6.18', '5.10', '4.4']) {
      for (let seed = 1; seed <= 6; seed++) {
        for (let i = 0; i < 3; i++) {
          const q = synQuestion(seed, i, kernel);
          const want = agentSyn(q);
          expect(q.expected, `${kernel} seed ${seed} question ${i}`).toBe(want.listener);
          expect(`0x${q.explain.hash.hashHex}`).toBe(want.hash);
          expect(q.choices).toContain(want.listener);
        }
      }
    }
  });

  it('bind questions: every call before the new bind() succeeds, and that bind() gets the agent’s errno and conflicting socket', () => {
    let n = 0;
    for (const kernel of ['6.18', '4.4']) {
      for (let seed = 1; seed <= 8; seed++) {
        for (let i = 0; i < 3; i++) {
          const q = bindQuestion(seed, i, kernel);
          const answers = agentAnswers(q, n++);
          const label = `${kernel} seed ${seed} question ${i}`;
          // The call asked about is the log's last: the new socket's bind() (the sockets are fd 0, 1, ...).
          expect(q.bindCall, label).toBe(q.log.calls.length - 1);
          expect(q.log.calls[q.bindCall], label).toMatchObject({ call: 'bind', fd: q.sockets.length - 1 });
          expect(answers.slice(0, -1), label).toEqual(answers.slice(0, -1).map(() => null));
          const last = answers[answers.length - 1] ?? null;
          expect(q.expected, label).toBe(last?.errno ?? 'success');
          expect(q.refusal?.with ?? null, label).toBe(last?.with ?? null);
        }
      }
    }
  });
});

const HAN = /[\u4e00-\u9fff\u3000-\u303f\uff00-\uffef]/;

function leaves(o: unknown, path = ''): [string, unknown][] {
  if (typeof o === 'function') return leaves((o as (...a: unknown[]) => unknown)(3, 5, '0.0.0.0:80', '6.18'), path);
  if (Array.isArray(o)) return o.flatMap((v, i) => leaves(v, `${path}[${i}]`));
  if (o && typeof o === 'object') return Object.entries(o).flatMap(([k, v]) => leaves(v, path ? `${path}.${k}` : k));
  return [[path, o]];
}

describe('exercise words', () => {
  it('has the same keys in English and Chinese', () => {
    expect(leaves(EXERCISE_TEXT.zh).map(([k]) => k)).toEqual(leaves(EXERCISE_TEXT.en).map(([k]) => k));
  });

  it('says every Chinese string in Chinese', () => {
    // Identifiers read the same in every language.
    const same = new Set(['UID', 'TIME_WAIT']);
    for (const [k, v] of leaves(EXERCISE_TEXT.zh)) {
      if (typeof v !== 'string' || same.has(v)) continue;
      expect(v, k).toMatch(HAN);
    }
  });
});
