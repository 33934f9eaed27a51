import { defineConfig } from 'vitest/config';
import traceValidator from './site/trace-validator-plugin.mjs';

export default defineConfig({
  plugins: [traceValidator()],
  test: {
    include: ['tests/unit/**/*.test.ts'],
    environment: 'node',
  },
});
