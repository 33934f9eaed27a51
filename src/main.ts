import init, { modelVersion } from './model/pkg/reuseport.js';

async function main(): Promise<void> {
  await init();
  const title = document.querySelector<HTMLHeadingElement>('#title');
  if (title) title.textContent = `Reuseport Lab — model ${modelVersion()}`;
}

main().catch((err: unknown) => {
  console.error(err);
  const title = document.querySelector<HTMLHeadingElement>('#title');
  if (title) title.textContent = 'Reuseport Lab — the model failed to load';
});
