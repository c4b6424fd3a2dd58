// The errors page: one section per code, so every docs_url (`/docs/errors#<code>`) lands on its explanation. And the
// Markdown documents served as they are in the repository (the changelog and the deprecation policy).
import { readFileSync } from 'node:fs';
import { errorCodes, errorTable, transportStatus } from '../contracts/index.ts';

/** The repository's docs/ folder, found from this module so the gateway serves the files, not copies of them. */
const docsDir = new URL('../docs/', import.meta.url);

/** A Markdown file of docs/, read once when the gateway starts; a missing file stops the start. */
export function markdownDocument(file: 'CHANGELOG.md' | 'deprecation.md'): string {
  return readFileSync(new URL(file, docsDir), 'utf8');
}

const esc = (s: string) => s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);

export function errorsPage(): string {
  const sections = errorCodes
    .map((code) => {
      const e = errorTable[code];
      const reason = 'statusReason' in e ? `<p><em>Why ${e.status}:</em> ${esc(e.statusReason)}</p>` : '';
      return `<section id="${code}">
  <h2><code>${code}</code></h2>
  <dl><dt>HTTP status</dt><dd>${e.status}</dd><dt>remediation</dt><dd><code>${e.remediation}</code></dd>
  <dt>retryable</dt><dd>${e.retryable}</dd></dl>
  <p>${esc(e.title)}</p>${reason}
</section>`;
    })
    .join('\n');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Assay API errors</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:52rem;margin:2rem auto;padding:0 1rem}section{border-top:1px solid #ccc;padding-top:.5rem}dt{font-weight:600;float:left;width:9rem}dd{margin-left:9rem}</style>
</head><body>
<h1>Errors of the Assay agent API</h1>
<p>Every error on an agent route is this JSON object: <code>{ code, message, remediation, retryable, docs_url }</code>.
Codes are stable: a code is never renamed or reused. When several refusals apply, they are checked in the order of
this page (authentication, scope, validation, Idempotency-Key, then the operation's own rules).</p>
<p>Four transport refusals keep the code <code>validation_failed</code> with another status: a body larger than the
configured limit answers ${transportStatus.bodyTooLarge}, a body that does not arrive within the read timeout answers
${transportStatus.bodyReadTimeout} (both close the connection), a body that is not UTF-8 text or not JSON answers ${transportStatus.malformedJson}, and an MCP
request without <code>Mcp-Session-Id</code> (or with an <code>MCP-Protocol-Version</code> other than its session's)
answers ${transportStatus.mcpSessionHeaders}.
A request to a path that exists with another method answers 404 <code>not_found</code> with an <code>Allow</code> header.
Text anywhere in a request must be well-formed Unicode without NUL, and values may nest at most 32 levels: otherwise
422 <code>validation_failed</code>, naming where.
Responses with <code>retryable: true</code> may carry <code>Retry-After</code>.</p>
${sections}
</body></html>
`;
}
