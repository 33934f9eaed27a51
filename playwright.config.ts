import { defineConfig, devices } from '@playwright/test';

// PW_PORT and PW_DIST let two checkouts' runs (or two helpers) test their own builds side by side.
const PORT = Number(process.env.PW_PORT ?? 4173);
const DIST = process.env.PW_DIST ?? 'dist';
const baseURL = `http://127.0.0.1:${PORT}`;

// `npx playwright install` cannot download browsers here: use the system Chromium
// (Debian package `chromium`, installed by scripts/setup.sh).
const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

export default defineConfig({
  testDir: 'tests/e2e',
  // The release agent the tests take expected answers from, built once for the run (tests/agent.ts).
  globalSetup: './tests/e2e/global-setup.ts',
  // Every test on its own, two at a time: the crawl is a test per page (site.spec.ts), and two workers keep both
  // cores of the machine busy beside the preview server (PW_WORKERS to change it).
  fullyParallel: true,
  workers: Number(process.env.PW_WORKERS ?? 2),
  forbidOnly: !!process.env.CI,
  retries: 0,
  // Tests wait on conditions, never on the clock: a bound is how long a loaded machine may take, not a speed the
  // test asks for (scripts/bench-*.mjs print the times). Playwright's default of 5 s failed tests under load.
  expect: { timeout: 20_000 },
  timeout: 90_000,
  reporter: process.env.CI ? 'line' : 'list',
  use: {
    baseURL,
    headless: true,
    trace: 'retain-on-failure',
  },
  projects: [
    {
      name: 'chromium',
      use: {
        ...devices['Desktop Chrome'],
        launchOptions: {
          executablePath: chromiumPath,
          args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
        },
      },
    },
  ],
  // Tests run against the production build (dist/, made by `astro build`).
  webServer: {
    command: `npx astro preview --port ${PORT} --host 127.0.0.1 --outDir ${DIST}`,
    url: baseURL,
    reuseExistingServer: !process.env.CI,
    timeout: 60_000,
  },
});
