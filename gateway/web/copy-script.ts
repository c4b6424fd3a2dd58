// The one script of the web pages: copy buttons. A page works without it (a secret is shown in a field that selects
// whole on a click); with it, each `<button data-copy="ID" hidden>` appears and copies the text of the element with
// that id. Served at `copyScriptPath` and allowed by its hash alone (the page's `integrity` attribute carries it), so
// the Content-Security-Policy still lets no other script run.
import { createHash } from 'node:crypto';

export const copyScriptPath = '/assets/copy.js';

export const copyScript = `'use strict';
for (const button of document.querySelectorAll('button[data-copy]')) {
  const source = document.getElementById(button.dataset.copy);
  const status = document.getElementById(button.dataset.copy + '-status');
  if (!source || !navigator.clipboard) continue;
  button.hidden = false;
  button.addEventListener('click', () => {
    navigator.clipboard.writeText(source.textContent.trim()).then(
      () => { if (status) status.textContent = 'Copied to the clipboard.'; },
      () => { if (status) status.textContent = 'Could not copy: select the text and copy it.'; },
    );
  });
}
`;

/** `sha256-<base64>`: the page's integrity attribute and the policy's script source. */
export const copyScriptHash = `sha256-${createHash('sha256').update(copyScript).digest('base64')}`;
