import { beforeAll, describe, expect, it } from 'vitest';
import { parseClients } from '../../src/scene/dispatch/clients';
import { loadModelForTests } from './setup-model';

beforeAll(loadModelForTests);

const clientLines = (n: number) => Array.from({ length: n }, (_, i) => `198.18.${(i >> 8) & 255}.${i & 255} ${40000 + (i % 20000)}`);

describe('the client list bound', () => {
  it('takes exactly the bound of clients, comments and blank lines not counted', () => {
    const text = ['# my clients', '', ...clientLines(5000)].join('\n');
    const r = parseClients(text, 2, 1, 5000);
    expect(r.tooMany).toBeUndefined();
    expect(r.errors).toEqual([]);
    expect(r.clients).toHaveLength(5000);
  });

  it('refuses one client past the bound and names the line it is on', () => {
    // Line 1 is a comment, line 2 blank: the 5001st client is on line 5003.
    const text = ['# my clients', '', ...clientLines(5001)].join('\n');
    const r = parseClients(text, 2, 1, 5000);
    expect(r.tooMany).toEqual({ line: 5003, max: 5000 });
    expect(r.clients).toEqual([]);
  });

  it('refuses a million-line list at the first line past the bound, with no client parsed', () => {
    const r = parseClients('198.18.0.1 40000\n'.repeat(1_000_000), 2, 1, 5000);
    expect(r.tooMany).toEqual({ line: 5001, max: 5000 });
    expect(r.clients).toEqual([]);
    expect(r.errors).toEqual([]);
  });
});
