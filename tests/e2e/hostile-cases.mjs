// Hostile and extreme values of the dispatch page's URL, each once so that a failure names it: the query, and how
// the page's message quotes it (`name=value`, a long value cut). Shared by tests/e2e/hostile-urls.spec.ts, which
// checks that each is named and the page stays responsive, and scripts/bench-hostile.mjs, which times the pages.
export const DISPATCH_CASES = [
  ['rate=1000000000', 'rate=1000000000'],
  ['speed=1000000000', 'speed=1000000000'],
  ['rate=Infinity', 'rate=Infinity'],
  ['clients=100000000', 'clients=100000000'],
  ['listeners=-1', 'listeners=-1'],
  ['listeners=NaN', 'listeners=NaN'],
  ['listeners=1.5', 'listeners=1.5'],
  ['listeners=1e3', 'listeners=1e3'],
  ['kernel=9.99', 'kernel=9.99'],
  [`kernel=${'9'.repeat(5000)}`, `kernel=${'9'.repeat(32)}…`],
  ['seed=-1', 'seed=-1'],
];

/** The one-connection widget's URL with 1,000,000 listeners on 4.4 (a chain scanned whole for each line), one line given. */
export const LOOKUP_MILLION = `embed/lookup/?kernel=4.4&listeners=1000000&secret=0x2f3923d9&tuples=${encodeURIComponent('10.0.0.2 40000 10.0.0.1 8080')}`;

/** 200 lines for that widget: its most, each a different client. */
export const LOOKUP_LINES = Array.from({ length: 200 }, (_, i) => `10.0.${i >> 8}.${(i & 255) + 1} ${40000 + i} 10.0.0.1 8080`).join('\n');
