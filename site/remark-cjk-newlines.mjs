// A line break inside a Chinese paragraph of the Markdown source would show as
// a space (browsers do not drop it between CJK characters), so it is removed
// wherever the character before or after it is CJK.
import { visit } from 'unist-util-visit';

const CJK = '\\u2e80-\\u9fff\\uf900-\\ufaff\\uff00-\\uffef\\u3000-\\u303f';
const inside = new RegExp(`(?<=[${CJK}])\\n|\\n(?=[${CJK}])`, 'g');
const cjkEnd = new RegExp(`[${CJK}]$`);

export default function remarkCjkNewlines() {
  return (tree) => {
    visit(tree, 'text', (node) => {
      node.value = node.value.replace(inside, '');
      // A break at the edge of a text node, next to inline code or a link: drop it after CJK text.
      if (node.value.endsWith('\n') && cjkEnd.test(node.value.slice(0, -1))) node.value = node.value.slice(0, -1);
    });
  };
}
