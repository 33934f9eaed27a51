/** The site shell: loads the model and mounts the lookup island. */
import './styles.css';
import { loadModel, version } from './model/index';
import { defineLookupElement, mountLookup } from './islands/lookup';

async function main(): Promise<void> {
  await loadModel();
  const v = document.querySelector<HTMLElement>('#model-version');
  if (v) v.textContent = `model ${version()}`;
  defineLookupElement();
  const app = document.querySelector<HTMLElement>('#app');
  if (app) await mountLookup(app);
}

main().catch((err: unknown) => {
  console.error(err);
  const v = document.querySelector<HTMLElement>('#model-version');
  if (v) v.textContent = `The model failed to load: ${err instanceof Error ? err.message : String(err)}`;
});
