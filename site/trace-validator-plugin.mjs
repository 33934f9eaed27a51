// `virtual:trace-validator`: the trace schema (public/traces/schema/trace-v1.schema.json)
// compiled by Ajv at build time into plain code, so the page needs no `eval`
// (a Content Security Policy without 'unsafe-eval' still runs it). Used by the
// site build and by Vitest.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import Ajv2020 from 'ajv/dist/2020.js';
import standaloneCode from 'ajv/dist/standalone/index.js';

const ID = 'virtual:trace-validator';

// Ajv's standalone code counts a string's length for `maxLength` with a
// runtime helper it loads by `require()`, even in ESM output, which a page
// does not have. The helper (ajv/dist/runtime/ucs2length, code points, not
// UTF-16 units, as the agent's validator counts) is written in instead.
const UCS2LENGTH = /require\("ajv\/dist\/runtime\/ucs2length"\)\.default/g;
const UCS2LENGTH_FN = `function ucs2length(str) {
  let length = 0;
  for (let pos = 0; pos < str.length; length++) {
    const value = str.charCodeAt(pos++);
    if (value >= 0xd800 && value <= 0xdbff && pos < str.length && (str.charCodeAt(pos) & 0xfc00) === 0xdc00) pos++;
  }
  return length;
}
`;
const schemaPath = fileURLToPath(new URL('../public/traces/schema/trace-v1.schema.json', import.meta.url));

export default function traceValidator() {
  return {
    name: 'reuseport-trace-validator',
    resolveId(id) {
      return id === ID ? `\0${ID}` : undefined;
    },
    load(id) {
      if (id !== `\0${ID}`) return undefined;
      this.addWatchFile?.(schemaPath);
      const ajv = new Ajv2020({ allErrors: true, strict: false, code: { source: true, esm: true } });
      const validate = ajv.compile(JSON.parse(readFileSync(schemaPath, 'utf8')));
      const code = standaloneCode(ajv, validate);
      if (!code.includes('ajv/dist/runtime/ucs2length')) return code;
      return UCS2LENGTH_FN + code.replace(UCS2LENGTH, 'ucs2length');
    },
  };
}
