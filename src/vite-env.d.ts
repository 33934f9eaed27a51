/// <reference types="vite/client" />

/** The trace schema compiled by Ajv at build time (site/trace-validator-plugin.mjs). */
declare module 'virtual:trace-validator' {
  import type { ErrorObject } from 'ajv';
  const validate: ((data: unknown) => boolean) & { errors?: ErrorObject[] | null };
  export default validate;
}
