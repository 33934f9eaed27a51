// Lines the formatter cannot shorten (a long string or template literal) still
// fail here: every TypeScript/JavaScript line in the tree is at most WIDTH
// characters, the formatter's lineWidth in biome.json. Prints file:line for each.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

const WIDTH = JSON.parse(readFileSync('biome.json', 'utf8')).formatter.lineWidth;
const files = execFileSync('git', ['ls-files', '-co', '--exclude-standard', '--', 'src', 'site', 'scripts', 'tests', '*.ts', '*.mjs'], { encoding: 'utf8' })
  .split('\n')
  .filter((f) => /\.(ts|mts|mjs|js|astro)$/.test(f) && !f.startsWith('src/model/generated/') && !f.startsWith('src/model/pkg'));
let over = 0;
for (const f of files) {
  let text;
  try {
    text = readFileSync(f, 'utf8');
  } catch {
    continue; // listed by git but deleted in the working tree
  }
  text.split('\n').forEach((line, i) => {
    const n = [...line].length;
    if (n > WIDTH) {
      over++;
      console.log(`${f}:${i + 1}: ${n} characters (at most ${WIDTH}): split the string or the expression`);
    }
  });
}
if (over) {
  console.log(`${over} line(s) longer than ${WIDTH} characters`);
  process.exit(1);
}
