import type { Plugin } from 'vite';
/** `virtual:trace-validator`: the trace schema compiled to code at build time. */
export default function traceValidator(): Plugin;
