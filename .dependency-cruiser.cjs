// The import rules of src/ (npm run lint and npm test, through `depcruise --validate`):
// - no import cycle, type-only imports included;
// - the layers, lowest first: model < scene < render < islands. Data flows model → scene →
//   render; the widgets in islands/ wire them, and no layer imports one above it. Files outside
//   these folders (hex.ts, clock.ts, styles/, embed/) are held only by the cycle rule.
// The wasm packages and the types generated from Rust are leaves and are not read.
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    { name: 'no-circular', comment: 'src/ reads bottom-up: no file imports itself through others', severity: 'error', from: {}, to: { circular: true } },
    {
      name: 'model-imports-above',
      comment: 'model/ is the lowest layer',
      severity: 'error',
      from: { path: '^src/model/' },
      to: { path: '^src/(scene|render|islands)/' },
    },
    { name: 'scene-imports-above', comment: 'scene/ returns facts; it does not draw', severity: 'error', from: { path: '^src/scene/' }, to: { path: '^src/(render|islands)/' } },
    { name: 'render-imports-islands', comment: 'render/ draws; it never imports a widget', severity: 'error', from: { path: '^src/render/' }, to: { path: '^src/islands/' } },
  ],
  options: {
    // TypeScript 7 has no JavaScript API for dependency-cruiser to parse with; swc reads the files.
    parser: 'swc',
    tsPreCompilationDeps: true,
    exclude: { path: '(^|/)(generated|pkg|pkg-lookup)/|\\.d\\.ts$' },
    doNotFollow: { path: 'node_modules' },
  },
};
