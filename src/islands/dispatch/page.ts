/** The visualizer page: loads the model and mounts `<reuseport-dispatch>` options from the URL (?kernel=6.18&listeners=8&seed=1…). */
import '../../styles.css';
import { loadModel, version } from '../../model/index';
import { defineDispatchElement, mount, type DispatchOptions } from '../dispatch';
import { parseHex32 } from '../../scene/dispatch/rng';

function fromUrl(): DispatchOptions {
  const q = new URLSearchParams(location.search);
  const n = (k: string) => (q.has(k) ? Number(q.get(k)) : undefined);
  return {
    kernel: q.get('kernel') ?? undefined,
    proto: (q.get('proto') as DispatchOptions['proto']) ?? undefined,
    listeners: n('listeners'),
    clients: n('clients'),
    rate: n('rate'),
    speed: n('speed'),
    seed: n('seed'),
    secret: q.has('secret') ? parseHex32(q.get('secret')!) : undefined,
    wildcard: q.get('bind') === 'wildcard',
    cpus: n('cpus'),
    autoplay: q.get('autoplay') !== 'false',
  };
}

async function main(): Promise<void> {
  await loadModel();
  const v = document.querySelector<HTMLElement>('#model-version');
  if (v) v.textContent = `model ${version()}`;
  defineDispatchElement();
  const app = document.querySelector<HTMLElement>('#app');
  if (app) await mount(app, fromUrl());
}

main().catch((err: unknown) => {
  console.error(err);
  const v = document.querySelector<HTMLElement>('#model-version');
  if (v) v.textContent = `The model failed to load: ${err instanceof Error ? err.message : String(err)}`;
});
