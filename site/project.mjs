// Where the project lives, said once for the whole site: the source repository's URL is package.json's
// `repository.url`, or REPO_URL at build time for a fork or a mirror. The header's source link, the footer of every
// page and the Markdown (`{repo}` in a link or in code, site/remark-project.mjs) all take it from here.
// A JSON import, not a file read beside this module: the footer's copy of it is bundled into the build's output.
import pkg from '../package.json' with { type: 'json' };

/** The source repository, without a trailing `.git` or `/`. */
export const REPO_URL = (process.env.REPO_URL || pkg.repository?.url || '').replace(/^git\+/, '').replace(/(\.git)?\/?$/, '');
if (!/^https:\/\/[^\s/]+\/\S+$/.test(REPO_URL))
  throw new Error(`site/project.mjs: the repository URL "${REPO_URL}" is not an https URL (REPO_URL or package.json repository.url)`);

/** The offline course pack, built into the site's output (site/pack-build.mjs), as a path under the site's base. */
export { PACK_FILE } from '../scripts/pack-lib.mjs';
