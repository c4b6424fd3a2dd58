// The OpenAPI 3.1 document, generated from the operation table and the error table, and the OAuth server's endpoints
// from the web face's route table (gateway/web/). Operations that are not available in this version are left out.
import {
  changelogPath,
  deprecationPolicyPath,
  errorTable,
  type ErrorCode,
  type Operation,
  type OperationDeprecation,
  pipelineErrors,
  type Scope,
  schemas,
  scopes,
  scopeWords,
  transportStatus,
} from '../contracts/index.ts';
import { idempotencyKeyLengthMax } from './pipeline.ts';
import type { WebRoute, WebRouteDoc } from './web/face.ts';

/** The Streamable HTTP headers of an MCP request (docs/mcp.md). */
const mcpHeaders = [
  {
    name: 'Mcp-Session-Id',
    in: 'header',
    required: false,
    description: 'The session id initialize returned; required on every request but initialize.',
    schema: { type: 'string' },
  },
  {
    name: 'MCP-Protocol-Version',
    in: 'header',
    required: false,
    description: 'The protocol revision negotiated at initialize; when present it must be that one.',
    schema: { type: 'string' },
  },
];

const plain = (schema: unknown) => JSON.parse(JSON.stringify(schema)) as Record<string, unknown>;
const errorRef = { $ref: '#/components/schemas/Error' };

export function openApiDocument(ops: readonly Operation[], baseUrl: string, webRoutes: readonly WebRoute[]) {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const op of ops) {
    if (!op.available) continue;
    paths[op.path] = { ...paths[op.path], [op.method.toLowerCase()]: operationObject(op, ops) };
  }
  for (const route of webRoutes) {
    if (!route.doc) continue;
    paths[route.path] = { ...paths[route.path], [route.method.toLowerCase()]: webRouteObject(route, route.doc) };
  }
  return {
    openapi: '3.1.0',
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
      schemas: { Error: plain(schemas.ErrorObject) },
    },
    paths,
  };
}

function operationObject(op: Operation, ops: readonly Operation[]) {
  const parameters: unknown[] = [];
  for (const [name, schema] of Object.entries(op.params.properties)) {
    parameters.push({ name, in: 'path', required: true, schema: plain(schema) });
  }
  const requiredQuery = new Set(op.query.required ?? []);
  for (const [name, schema] of Object.entries(op.query.properties)) {
    parameters.push({ name, in: 'query', required: requiredQuery.has(name), schema: plain(schema) });
  }
  if (op.mutating) {
    parameters.push({
      name: 'Idempotency-Key',
      in: 'header',
      required: true,
      description: 'Same key and body replays the stored result; same key, other body: idempotency_conflict.',
      schema: { type: 'string', minLength: 1, maxLength: idempotencyKeyLengthMax },
    });
  }
  if (op.dispatch.to === 'mcp') parameters.push(...mcpHeaders);
  const errorsByStatus = new Map<number, ErrorCode[]>();
  for (const code of new Set([...pipelineErrors(op), ...op.errors])) {
    const status = errorTable[code].status;
    errorsByStatus.set(status, [...(errorsByStatus.get(status) ?? []), code]);
  }
  if (op.body) {
    errorsByStatus.set(transportStatus.malformedJson, ['validation_failed']);
    errorsByStatus.set(transportStatus.bodyTooLarge, ['validation_failed']);
  }
  const responses: Record<string, unknown> = { [op.successStatus]: successResponse(op) };
  if (op.dispatch.to === 'mcp' && op.method === 'POST') {
    responses['202'] = { description: 'Accepted: the body held only notifications or responses.' };
  }
  // Negotiation refusals keep the MCP transport's JSON-RPC form (docs/mcp.md, Error mapping).
  if (op.dispatch.to === 'mcp' && op.method !== 'DELETE') {
    const jsonRpcError = {
      'application/json': { schema: { type: 'object', description: 'A JSON-RPC error, id null.' } },
    };
    responses['406'] = {
      description: 'Accept does not name both application/json and text/event-stream.',
      content: jsonRpcError,
    };
    if (op.method === 'POST') {
      responses['415'] = { description: 'The Content-Type is not application/json.', content: jsonRpcError };
    }
  }
  for (const [status, codes] of [...errorsByStatus].sort((a, b) => a[0] - b[0])) {
    responses[status] = {
      description: `Typed error: ${codes.join(', ')}.`,
      content: { 'application/json': { schema: errorRef } },
    };
  }
  if (op.deprecated) {
    for (const response of Object.values(responses) as { headers?: Record<string, unknown> }[]) {
      response.headers = { ...response.headers, ...deprecationResponseHeaders };
    }
  }
  return {
    operationId: op.id,
    summary: op.summary,
    ...(op.deprecated ? deprecationFields(op.deprecated, ops) : {}),
    ...(op.scope
      ? { security: [{ bearer: [] }, { oauth2: [op.scope] }], 'x-scope': op.scope }
      : { security: op.dispatch.to === 'mcp' ? [{ bearer: [] }] : [] }),
    ...(op.tool ? { 'x-mcp-tool': op.tool } : {}),
    'x-dispatch': op.dispatch,
    parameters,
    ...(op.body
      ? { requestBody: { required: true, content: { 'application/json': { schema: plain(op.body) } } } }
      : {}),
    responses,
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

/** deprecated: true, the dates as extensions, and the same in words for readers of the summary and description. */
function deprecationFields(d: OperationDeprecation, ops: readonly Operation[]) {
  const replacement = ops.find((r) => r.id === d.replacement);
  const instead = replacement ? ` Use ${replacement.method} ${replacement.path} (${replacement.id}) instead.` : '';
  return {
    description: `Deprecated since ${d.since}; from ${d.sunset} (the Sunset date) it answers 404 not_found.${instead} See ${deprecationPolicyPath}.`,
    deprecated: true,
    'x-deprecated-since': d.since,
    'x-sunset': d.sunset,
    ...(replacement ? { 'x-replacement': replacement.id } : {}),
  };
}

/**
 * The success response: JSON for most rows; the errors page is HTML, the changelog and deprecation policy Markdown,
 * the MCP event stream SSE, DELETE /mcp empty.
 */
function successResponse(op: Operation) {
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
  return { description: 'Success.', content: { [type]: { schema: plain(op.output) } } };
}

/** An OAuth endpoint (or its metadata), as its route documents it. */
function webRouteObject(route: WebRoute, doc: NonNullable<WebRoute['doc']>) {
  // A body the HTTP layer cannot read (not UTF-8, too slow, too large) is refused before the endpoint runs.
  const unread: WebRouteDoc['responses'] = doc.request
    ? {
        400: {
          description: 'invalid_request: the body is not UTF-8 text or did not arrive in time.',
          media: 'application/json',
        },
        413: {
          description: 'invalid_request: the body is larger than ASSAY_BODY_BYTES_MAX.',
          media: 'application/json',
        },
      }
    : {};
  return {
    operationId: `oauth ${route.method} ${route.path}`.replace(/[^A-Za-z0-9]+(.)?/g, (_, c: string | undefined) =>
      c ? c.toUpperCase() : '',
    ),
    summary: doc.summary,
    description: `Follows ${doc.rfc}. Errors are RFC 6749 bodies {error, error_description} (HTML pages where a person is shown one), not the typed Error object of the agent routes.`,
    security: doc.security === 'initialAccessToken' ? [{ initialAccessToken: [] }] : [],
    ...(doc.request
      ? { requestBody: { required: true, content: { [doc.request.media]: { schema: doc.request.schema } } } }
      : {}),
    responses: Object.fromEntries(
      Object.entries({ ...unread, ...doc.responses }).map(([status, r]) => [
        status,
        { description: r.description, ...(r.media ? { content: { [r.media]: { schema: {} } } } : {}) },
      ]),
    ),
  };
}
