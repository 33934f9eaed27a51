/**
 * The front page's proof states figures; they must be the data's: the traces
 * with a known key and their events (public/traces/manifest.json), and the
 * model's number of kernel profiles.
 */
import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { profiles } from '../../src/model/index';
import { loadModelForTests } from './setup-model';

interface Entry {
  kind: string;
  recorded: number;
  key?: string;
}
const manifest = JSON.parse(readFileSync('public/traces/manifest.json', 'utf8')) as { traces: Entry[] };
const keyed = manifest.traces.filter((t) => t.kind === 'trace' && t.key);
const events = keyed.reduce((n, t) => n + t.recorded, 0);
const fmt = (n: number) => n.toLocaleString('en');

describe('front page proof', () => {
  beforeAll(loadModelForTests);
  const en = readFileSync('content/en/index.md', 'utf8');
  const zh = readFileSync('content/zh-CN/index.md', 'utf8');

  it('counts the recorded choices in the traces with a known key', () => {
    expect(en).toContain(`<strong>${fmt(events)} of ${fmt(events)}</strong>`);
    expect(en).toContain(`in ${keyed.length} measured traces`);
    expect(zh).toContain(`<strong>${fmt(events)} / ${fmt(events)}</strong>`);
    expect(zh).toContain(`在 ${keyed.length} 份已知开机密钥的实测轨迹中`);
  });

  it('counts the model’s kernel profiles', () => {
    expect(en).toContain(`<strong>${profiles().length} kernel profiles</strong>`);
    expect(zh).toContain(`<strong>${profiles().length} 个内核配置档</strong>`);
  });
});
