// The agent API's document (/openapi.json, docs/openapi.json): the operation table's available rows, with the typed
// error object as their error body, and the OAuth server's endpoints (oauth.ts).
import {
  changelogPath,
  deprecationPolicyPath,
  errorTable,
  type Operation,
  type OperationDeprecation,
  pipelineErrors,
  type Scope,
  schemas,
  scopes,
  scopeWords,
  transportStatus,
} from '../../contracts/index.ts';
import { idempotencyKeyLengthMax } from '../pipeline.ts';
import type { WebRoute } from '../web/route.ts';
import {
  type DocumentedResponse,
  type DocumentedRoute,
  errorsByStatus,
  jsonContent,
  openApiDocument,
  openApiPaths,
  parameter,
  pathParameters,
} from './generator.ts';
import { oauthFace } from './oauth.ts';

export function agentOpenApiDocument(ops: readonly Operation[], baseUrl: string, webRoutes: readonly WebRoute[]) {
  return openApiDocument({
    info: {
      title: 'Assay agent API',
      version: '1.0.0',
      description: `Verified-artifact marketplace for AI agents. Every /v1 route has an MCP tool twin (x-mcp-tool) running the same pipeline: scope, validation, Idempotency-Key, handler. Errors are always the typed Error object; see /docs/errors. Changes by version: ${changelogPath}. Deprecation policy: ${deprecationPolicyPath} (a deprecated operation is marked deprecated, with x-deprecated-since and x-sunset, and answers with Deprecation, Sunset and Link headers).`,
      'x-changelog': `${baseUrl}${changelogPath}`,
      'x-deprecation-policy': `${baseUrl}${deprecationPolicyPath}`,
    },
    externalDocs: { description: 'Changelog (Keep a Changelog, Markdown)', url: `${baseUrl}${changelogPath}` },
    servers: [{ url: baseUrl }],
    components: {
      securitySchemes: {
        bearer: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'JWT',
          description: 'A sandbox token (POST /sandbox/agents) or an OAuth access token (asyo_ + JWT).',
        },
        oauth2: {
          type: 'oauth2',
          description:
            'The OAuth 2.1 server of this API (metadata at /.well-known/oauth-authorization-server): public clients registered with an initial access token, PKCE S256, refresh rotation, token exchange and the device grant.',
          flows: {
            authorizationCode: {
              authorizationUrl: `${baseUrl}/oauth/authorize`,
              tokenUrl: `${baseUrl}/oauth/token`,
              refreshUrl: `${baseUrl}/oauth/token`,
              scopes: Object.fromEntries(scopes.map((s) => [s, scopeWords[s as Scope]])),
            },
          },
        },
        initialAccessToken: {
          type: 'http',
          scheme: 'bearer',
          description: 'An initial access token (asyi_), issued on the account page, for POST /oauth/register.',
        },
      },
      schemas: { Error: schemas.ErrorObject },
    },
    paths: openApiPaths([
      {
        routes: ops.filter((op) => op.available).map((op) => operationRoute(op, ops)),
        errors: { schema: 'Error', describe: (codes) => `Typed error: ${codes.join(', ')}.` },
        operationIdFirst: true,
        emptyParameters: true,
      },
      oauthFace(webRoutes),
    ]),
  });
}

/** The Streamable HTTP headers of an MCP request (docs/mcp.md). */
const mcpHeaders = [
  parameter(
    'header',
    'Mcp-Session-Id',
    false,
    { type: 'string' },
    'The session id initialize returned; required on every request but initialize.',
  ),
  parameter(
    'header',
    'MCP-Protocol-Version',
    false,
    { type: 'string' },
    'The protocol revision negotiated at initialize; when present it must be that one.',
  ),
];

const idempotencyKey = parameter(
  'header',
  'Idempotency-Key',
  true,
  { type: 'string', minLength: 1, maxLength: idempotencyKeyLengthMax },
  'Same key and body replays the stored result; same key, other body: idempotency_conflict.',
);

function operationRoute(op: Operation, ops: readonly Operation[]): DocumentedRoute {
  const mcp = op.dispatch.to === 'mcp';
  const requiredQuery = new Set(op.query.required ?? []);
  const errors = errorsByStatus(new Set([...pipelineErrors(op), ...op.errors]), (code) => errorTable[code].status);
  if (op.body) {
    errors.set(transportStatus.malformedJson, ['validation_failed']);
    errors.set(transportStatus.bodyTooLarge, ['validation_failed']);
  }
  const responses: Record<number, DocumentedResponse> = { [op.successStatus]: successResponse(op) };
  if (mcp && op.method === 'POST') {
    responses[202] = { description: 'Accepted: the body held only notifications or responses.' };
  }
  // Negotiation refusals keep the MCP transport's JSON-RPC form (docs/mcp.md, Error mapping).
  if (mcp && op.method !== 'DELETE') {
    const jsonRpcError = jsonContent({ type: 'object', description: 'A JSON-RPC error, id null.' });
    responses[406] = {
      description: 'Accept does not name both application/json and text/event-stream.',
      content: jsonRpcError,
    };
    if (op.method === 'POST') {
      responses[415] = { description: 'The Content-Type is not application/json.', content: jsonRpcError };
    }
  }
  return {
    method: op.method,
    path: op.path,
    operationId: op.id,
    summary: op.summary,
    ...(op.deprecated ? deprecation(op.deprecated, ops) : {}),
    security: op.scope ? [{ bearer: [] }, { oauth2: [op.scope] }] : mcp ? [{ bearer: [] }] : [],
    extensions: {
      ...(op.scope ? { 'x-scope': op.scope } : {}),
      ...(op.tool ? { 'x-mcp-tool': op.tool } : {}),
      'x-dispatch': op.dispatch,
    },
    parameters: [
      ...pathParameters(op.path, op.params.properties),
      ...Object.entries(op.query.properties).map(([name, schema]) =>
        parameter('query', name, requiredQuery.has(name), schema),
      ),
      ...(op.mutating ? [idempotencyKey] : []),
      ...(mcp ? mcpHeaders : []),
    ],
    ...(op.body ? { body: jsonContent(op.body) } : {}),
    responses,
    errors,
  };
}

/** What every response of a deprecated operation carries (docs/deprecation.md). */
const deprecationResponseHeaders = {
  Deprecation: {
    description: 'RFC 9745: the date the operation was deprecated, as @<unix seconds>.',
    schema: { type: 'string' },
  },
  Sunset: {
    description: 'RFC 8594: the HTTP-date from which the operation answers 404 not_found.',
    schema: { type: 'string' },
  },
  Link: {
    description: `The deprecation policy, rel="deprecation" (${deprecationPolicyPath}).`,
    schema: { type: 'string' },
  },
};

/** The dates as the generator marks them, the same in words for readers of the description, and the headers. */
function deprecation(d: OperationDeprecation, ops: readonly Operation[]) {
  const replacement = ops.find((r) => r.id === d.replacement);
  const instead = replacement ? ` Use ${replacement.method} ${replacement.path} (${replacement.id}) instead.` : '';
  return {
    description: `Deprecated since ${d.since}; from ${d.sunset} (the Sunset date) it answers 404 not_found.${instead} See ${deprecationPolicyPath}.`,
    deprecated: { since: d.since, sunset: d.sunset, ...(replacement ? { replacement: replacement.id } : {}) },
    everyResponseHeaders: deprecationResponseHeaders,
  };
}

/**
 * The success response: JSON for most rows; the errors page is HTML, the changelog and deprecation policy Markdown,
 * the MCP event stream SSE, DELETE /mcp empty.
 */
function successResponse(op: Operation): DocumentedResponse {
  const d = op.dispatch;
  if (d.to === 'mcp' && op.method === 'DELETE') return { description: 'The session has ended.' };
  if (op.media) {
    return {
      description: 'The bytes, with a strong ETag and Content-Digest (RFC 9530, sha-256).',
      headers: {
        ETag: { schema: { type: 'string' } },
        'Content-Digest': { schema: { type: 'string' }, description: 'sha-256=:<base64>: of the body.' },
      },
      content: Object.fromEntries(op.media.map((m) => [m, { schema: { type: 'string', format: 'binary' } }])),
    };
  }
  const type =
    d.to === 'gateway' && d.page === 'errors'
      ? 'text/html'
      : d.to === 'gateway' && (d.page === 'changelog' || d.page === 'deprecationPolicy')
        ? 'text/markdown'
        : d.to === 'mcp' && op.method === 'GET'
          ? 'text/event-stream'
          : 'application/json';
  return { description: 'Success.', content: { [type]: { schema: op.output } } };
}
