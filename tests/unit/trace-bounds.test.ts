/**
 * Every string of a trace is bounded: a 1 MB `command` made a
 * 57–66 s long task in the trace viewer, which drew it as one span per
 * word. The schema refuses a string past its bound, naming the field, and
 * the viewer cuts the longest legal command to what a reader can use.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { checkTrace } from '../../src/model/trace-check';
import { SHOWN_COMMAND, cutText } from '../../src/scene/cut';

const trace = () => JSON.parse(readFileSync('public/traces/udp-v4-specific-8.json', 'utf8')) as Record<string, unknown>;

describe('trace string bounds', () => {
  it('refuses a 1 MB command, and any other string past its bound, naming the field', () => {
    const long = trace();
    long.command = 'reuseport-agent record '.repeat(50_000);
    expect(checkTrace(long).errors?.join('; ')).toMatch(/^\/command: must NOT have more than 65536 characters/);
    const release = trace();
    (release.kernel as Record<string, unknown>).release = '6'.repeat(100_000);
    expect(checkTrace(release).errors?.join('; ')).toMatch(/\/kernel\/release: must NOT have more than 64 characters/);
    expect(checkTrace(trace()).trace).toBeDefined();
  });

  it("takes the kernel's hash that observe --trace writes on each event, a 32-bit value", () => {
    const t = trace();
    const first = (t.events as Record<string, unknown>[])[0]!;
    first.hash = 0xffffffff;
    expect(checkTrace(t).trace).toBeDefined();
    first.hash = 2 ** 32;
    expect(checkTrace(t).errors?.join('; ')).toMatch(/^\/events\/0\/hash: must be <= 4294967295/);
  });

  it('cuts the longest command the schema allows to its start and the count of the rest', () => {
    const command = 'a '.repeat(32_768);
    const { shown, left } = cutText(command, SHOWN_COMMAND);
    expect(shown).toBe(command.slice(0, SHOWN_COMMAND));
    expect(left).toBe(command.length - SHOWN_COMMAND);
    expect(cutText('reuseport-agent record', SHOWN_COMMAND)).toEqual({ shown: 'reuseport-agent record', left: 0 });
    // Characters, not UTF-16 units: an emoji is never split in half.
    expect(cutText('😀😀😀', 2)).toEqual({ shown: '😀😀', left: 1 });
  });
});
