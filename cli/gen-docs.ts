// Regenerates the generated parts of the docs: the README's configuration table, docs/openapi.json and the
// context-file API's two documents (docs/openapi-contexts-web.json, docs/openapi-contexts-api.json).
// `npm run docs` runs it; test/spine/docs.test.ts fails when the committed files differ from what it would write.
import { readFileSync, writeFileSync } from 'node:fs';
import { configMarkdownTable, loadConfig, operations } from '../contracts/index.ts';
import { agentOpenApiDocument, contextOpenApiDocument, webRoutes } from '../gateway/index.ts';

const root = new URL('../', import.meta.url);
export const readmeUrl = new URL('README.md', root);
export const openapiUrl = new URL('docs/openapi.json', root);
export const contextOpenapiUrls = {
  web: new URL('docs/openapi-contexts-web.json', root),
  api: new URL('docs/openapi-contexts-api.json', root),
} as const;
const start = '<!-- config:start -->';
const end = '<!-- config:end -->';

export function renderReadme(current: string): string {
  const i = current.indexOf(start);
  const j = current.indexOf(end);
  if (i < 0 || j < i) throw new Error('README.md lacks the config markers');
  return `${current.slice(0, i + start.length)}\n${configMarkdownTable()}\n${current.slice(j)}`;
}

/** The document as served with the default base URL, for readers who do not run the service. */
export function renderOpenapi(): string {
  const config = loadConfig({});
  return `${JSON.stringify(agentOpenApiDocument(operations, config.baseUrl, webRoutes(config)), null, 2)}\n`;
}

/** The context-file API's document for one base form, with the default URLs. */
export function renderContextOpenapi(base: 'web' | 'api'): string {
  const config = loadConfig({});
  const url = base === 'web' ? `${config.webUrl}/api/v1` : `${config.apiUrl}/v1`;
  return `${JSON.stringify(contextOpenApiDocument(base, url), null, 2)}\n`;
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].split('/').pop()!)) {
  writeFileSync(readmeUrl, renderReadme(readFileSync(readmeUrl, 'utf8')));
  writeFileSync(openapiUrl, renderOpenapi());
  for (const base of ['web', 'api'] as const) writeFileSync(contextOpenapiUrls[base], renderContextOpenapi(base));
  console.log('README.md configuration table, docs/openapi.json and docs/openapi-contexts-*.json regenerated');
}
