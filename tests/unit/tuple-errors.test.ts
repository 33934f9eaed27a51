/**
 * A pasted tuple line that is not a tuple comes back from the model as a
 * structured line error (its kind, field and value), which the page says in
 * its own language. The lookup widget showed the model's English sentence on
 * the Chinese page, because the wasm layer turned the error into text.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { Group, parseTuples } from '../../src/model/index';
import { sayLineError } from '../../src/model/messages';
import { loadModelForTests } from './setup-model';

beforeAll(loadModelForTests);

const TEXT = ['127.0.0.9 40000 127.0.0.1 8080', '127.0.0.9 99999 127.0.0.1 8080', '127.0.0.11 40002 ::1 8080', 'a b c', '300.1.1.1:1 127.0.0.1:80'].join('\n');

describe('tuple line errors', () => {
  it('carry the kind, the field and the value, not a sentence', () => {
    const errors = parseTuples(TEXT).filter((p) => p.error);
    expect(errors.map((p) => p.line)).toEqual([2, 3, 4, 5]);
    expect(errors.map((p) => p.error!.kind)).toEqual(['port', 'mixedFamilies', 'fieldCount', 'address']);
    expect(errors[0]!.error).toMatchObject({ field: 'sourcePort', value: '99999', format: 'pairs' });
    expect(errors[3]!.error).toMatchObject({ field: 'sourceAddress', value: '300.1.1.1' });
  });

  it('are said in the language asked, with the field in its words', () => {
    const port = parseTuples(TEXT)[1]!.error!;
    expect(sayLineError('en', port)).toBe('source port `99999` in the address-pair format is not a port number (0 to 65535)');
    const zh = sayLineError('zh-CN', port);
    expect(zh).toContain('源端口 `99999`');
    expect(zh).toContain('不是端口号');
    expect(zh).not.toMatch(/source|port number/);
  });

  it('come the same way from a group explaining the lines, beside the answers', () => {
    const g = new Group('6.18', { proto: 'tcp', listeners: 8, bind: '127.0.0.1', port: 8080, keys: { v4: 0xacf13568, v6Outer: 0, v6Inner: 0 }, closed: [] });
    try {
      const answers = g.explainText(TEXT, 0);
      expect(answers.filter((a) => a.explain).map((a) => a.line)).toEqual([1]);
      expect(answers.filter((a) => a.error).map((a) => [a.line, a.error!.kind])).toEqual([
        [2, 'port'],
        [3, 'mixedFamilies'],
        [4, 'fieldCount'],
        [5, 'address'],
      ]);
    } finally {
      g.dispose();
    }
  });
});
