/// <reference types="vite/client" />

/**
 * The trace schema compiled by Ajv at build time (site/trace-validator-plugin.mjs). A value it
 * passes is of the type the caller names for the schema (src/model/trace-check.ts: `Trace`).
 */
declare module 'virtual:trace-validator' {
  import type { ErrorObject } from 'ajv';
  const validate: (<T>(data: unknown) => data is T) & { errors?: ErrorObject[] | null };
  export default validate;
}
