// The ran/skipped summary at the end of `npm test` (scripts/test.sh), from
// the logs it keeps in DIR: cargo.log (cargo test's output, where a test that
// cannot run here says `SKIPPED: name: reason`, agent/tests/common), vitest.json
// and playwright.json (their JSON reporters). A skip is never counted as a pass:
// a cargo test that printed SKIPPED is taken out of cargo's "passed".
// Usage: node scripts/test-summary.mjs DIR
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

const { positionals } = parseArgs({ allowPositionals: true });
const dir = positionals[0];
if (!dir || positionals.length > 1) {
  console.error('usage: node scripts/test-summary.mjs DIR');
  process.exit(2);
}
const read = (name) => (existsSync(join(dir, name)) ? readFileSync(join(dir, name), 'utf8') : null);
const rows = [];
const skips = [];

const cargo = read('cargo.log');
if (cargo !== null) {
  let passed = 0;
  let failed = 0;
  let ignored = 0;
  for (const m of cargo.matchAll(/test result: \w+\. (\d+) passed; (\d+) failed; (\d+) ignored/g)) {
    passed += Number(m[1]);
    failed += Number(m[2]);
    ignored += Number(m[3]);
  }
  for (const m of cargo.matchAll(/^test (\S+) \.\.\. ignored(?:, (.*))?$/gm)) skips.push(`cargo: ${m[1]}: ${m[2] ?? '#[ignore] without a reason'}`);
  // One test may say SKIPPED for several of its facts: it is one skipped test.
  const said = new Map();
  for (const m of cargo.matchAll(/SKIPPED: ([^:\n]+): ([^\n]*)/gi)) if (!said.has(m[1])) said.set(m[1], m[2]);
  for (const m of cargo.matchAll(/^skipped: ([^\n]*)/gm)) said.set(`(unnamed) ${m[1]}`, m[1]);
  for (const [name, why] of said) skips.push(`cargo: ${name}: ${why}`);
  rows.push({ suite: 'cargo test', ran: passed - said.size + failed, passed: passed - said.size, failed, skipped: ignored + said.size });
}

const vitest = read('vitest.json');
if (vitest !== null) {
  const j = JSON.parse(vitest);
  for (const file of j.testResults ?? [])
    for (const t of file.assertionResults ?? [])
      if (t.status === 'skipped' || t.status === 'pending' || t.status === 'todo') skips.push(`vitest: ${t.fullName} (${t.status})`);
  const skipped = j.numPendingTests + j.numTodoTests;
  rows.push({ suite: 'vitest', ran: j.numPassedTests + j.numFailedTests, passed: j.numPassedTests, failed: j.numFailedTests, skipped });
}

const pw = read('playwright.json');
if (pw !== null) {
  const j = JSON.parse(pw);
  const walk = (suite, path) => {
    for (const spec of suite.specs ?? [])
      for (const t of spec.tests ?? [])
        if (t.status === 'skipped') {
          const why = (t.annotations ?? []).filter((a) => a.type === 'skip' || a.type === 'fixme').map((a) => a.description ?? a.type);
          skips.push(`playwright: ${[...path, spec.title].join(' › ')}: ${why.join('; ') || 'skipped without a reason'}`);
        }
    for (const s of suite.suites ?? []) walk(s, [...path, s.title]);
  };
  for (const s of j.suites ?? []) walk(s, [s.title]);
  const { expected = 0, unexpected = 0, flaky = 0, skipped = 0 } = j.stats ?? {};
  rows.push({ suite: 'playwright', ran: expected + unexpected + flaky, passed: expected + flaky, failed: unexpected, skipped });
}

const total = { suite: 'total', ran: 0, passed: 0, failed: 0, skipped: 0 };
for (const r of rows) for (const k of ['ran', 'passed', 'failed', 'skipped']) total[k] += r[k];
console.log('\n==> test summary: tests that ran, passed, failed, and were skipped (a skip is not a pass)');
for (const r of [...rows, total])
  console.log(
    `  ${r.suite.padEnd(11)} ${String(r.ran).padStart(5)} ran  ${String(r.passed).padStart(5)} passed  ${String(r.failed).padStart(3)} failed  ` +
      `${String(r.skipped).padStart(3)} skipped`,
  );
if (skips.length) {
  console.log('  skipped, and why:');
  for (const s of skips) console.log(`    ${s}`);
}
