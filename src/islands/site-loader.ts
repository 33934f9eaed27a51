/** The site's pages: hydrate the widgets once the document is parsed. */
import { watchIslands } from './loader';

if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', () => watchIslands(), { once: true });
else watchIslands();
