import type { Page } from '@playwright/test';

/** Frames the page draws in one second: a frozen page draws none (a busy shared machine draws few, so keep bounds low). */
export const framesInASecond = (page: Page) =>
  page.evaluate(
    () =>
      new Promise<number>((done) => {
        let n = 0;
        const t0 = performance.now();
        const f = () => {
          if (performance.now() - t0 >= 1000) return done(n);
          n++;
          requestAnimationFrame(f);
        };
        requestAnimationFrame(f);
      }),
  );
