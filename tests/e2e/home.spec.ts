import AxeBuilder from '@axe-core/playwright';
import { expect, test } from '@playwright/test';

test('home page shows the model version from wasm', async ({ page }) => {
  await page.goto('./');
  await expect(page.getByRole('heading', { level: 1 })).toHaveText(/model \d+\.\d+\.\d+/);
});

test('home page has no axe violations', async ({ page }) => {
  await page.goto('./');
  await expect(page.getByRole('heading', { level: 1 })).toHaveText(/model \d+\.\d+\.\d+/);
  const results = await new AxeBuilder({ page }).analyze();
  expect(results.violations).toEqual([]);
});
