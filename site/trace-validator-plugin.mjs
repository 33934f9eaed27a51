// `virtual:trace-validator`: the trace schema (public/traces/schema/trace-v1.schema.json)
// compiled by Ajv at build time into plain code, so the page needs no `eval`
// (a Content Security Policy without 'unsafe-eval' still runs it). Used by the
// site build and by Vitest.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import Ajv2020 from 'ajv/dist/2020.js';
import standaloneCode from 'ajv/dist/standalone/index.js';

const ID = 'virtual:trace-validator';
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
      return standaloneCode(ajv, validate);
    },
  };
}
