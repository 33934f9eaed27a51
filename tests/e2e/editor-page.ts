/** The program editor on the steering chapter, as its specs open and read it. */
import { expect, type Locator, type Page } from '@playwright/test';

/** Opens the chapter at `path` and waits for the editor's first routing. */
export async function openEditor(page: Page, path = '/steering/'): Promise<Locator> {
  await page.goto(path);
  const w = page.locator('reuseport-editor');
  await w.scrollIntoViewIfNeeded();
  await expect(w).toHaveAttribute('data-state', 'routed', { timeout: 30_000 });
  return w;
}

/** The socket of every routed row, in order. */
export async function routedSockets(w: Locator): Promise<string[]> {
  return w.locator('table.rl-ed-routes tbody tr').evaluateAll((rows) => rows.map((r) => (r as HTMLElement).dataset.socket ?? ''));
}
