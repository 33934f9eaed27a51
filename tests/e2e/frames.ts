import { expect, type Page } from '@playwright/test';

/**
 * Resolves once the page has drawn `n` more animation frames: a frozen page draws none, and the wait fails at its
 * bound (the expect timeout: how long a loaded machine may take, not a speed the test asks for). How many frames a
 * second a page draws is a benchmark figure (scripts/bench-frames.mjs, scripts/bench-hostile.mjs), never a test's.
 */
export async function keepsDrawing(page: Page, n = 5) {
  const drawn = page.evaluate(
    (count) =>
      new Promise<number>((done) => {
        let k = 0;
        const f = () => (++k >= count ? done(k) : requestAnimationFrame(f));
        requestAnimationFrame(f);
      }),
    n,
  );
  // Polled, so the bound is the expect timeout's and a failure says what was awaited.
  await expect.poll(() => Promise.race([drawn, new Promise<number>((r) => setTimeout(() => r(0), 1000))]), { message: `${n} frames drawn` }).toBe(n);
}
