// Puts the project's repository URL (site/project.mjs) where a page writes `{repo}`: in a link's target, in inline
// code and in code blocks, so that no page spells the URL itself and a fork changes it in one place.
import { visit } from 'unist-util-visit';
import { REPO_URL } from './project.mjs';

export default function remarkProject() {
  return (tree) => {
    visit(tree, (node) => {
      if (node.type === 'link' && node.url.includes('{repo}')) node.url = node.url.replaceAll('{repo}', REPO_URL);
      if ((node.type === 'inlineCode' || node.type === 'code' || node.type === 'text') && node.value.includes('{repo}'))
        node.value = node.value.replaceAll('{repo}', REPO_URL);
    });
  };
}
