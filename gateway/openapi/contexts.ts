// The context-file API's documents, one per base form (docs/contexts.md): the routes are the same (gateway/context/
// routes.ts), the list envelope and its paging are the base form's. The web form's document also lists device sync's
// routes (sync.ts), which live beside it on {web_url}.
import { contextErrorNames } from '../context/answer.ts';
import { type ContextBase, type ContextRoute, contextRoutes, isListAnswer } from '../context/routes.ts';
import {
  type DocumentedResponse,
  type DocumentFace,
  type DocumentedRoute,
  jsonContent,
  operationIdOf,
  openApiDocument,
  openApiPaths,
  parameter,
  pathParameters,
  rateLimitHeaders,
} from './generator.ts';
import { syncErrorSchemas, syncFace } from './sync.ts';

type ContextErrorName = (typeof contextErrorNames)[keyof typeof contextErrorNames];

const integer = { type: 'integer' };

/** The list envelope of each base form and its paging parameters. */
const forms = {
  web: {
    title: 'Assay context-file API ({web_url}/api/v1)',
    envelope: (name: string, item: unknown) => ({
      type: 'object',
      required: ['data', 'meta'],
      properties: {
        data: { type: 'array', items: item },
        meta: {
          type: 'object',
          required: ['total', 'page', 'limit'],
          properties: { total: integer, page: integer, limit: integer },
        },
      },
      description: `The caller's ${name}, a page at a time.`,
    }),
    paging: [
      { name: 'page', schema: { type: 'integer', minimum: 1, default: 1 }, description: 'From 1.' },
      { name: 'limit', schema: { type: 'integer', minimum: 1, maximum: 100, default: 20 }, description: 'Page size.' },
    ],
  },
  api: {
    title: 'Assay context-file API ({api_url}/v1)',
    envelope: (name: string, item: unknown) => ({
      type: 'object',
      required: [name, 'pagination'],
      properties: {
        [name]: { type: 'array', items: item },
        pagination: {
          type: 'object',
          required: ['total', 'limit', 'offset', 'hasMore'],
          properties: { total: integer, limit: integer, offset: integer, hasMore: { type: 'boolean' } },
        },
      },
      description: `The caller's ${name}, from an offset.`,
    }),
    paging: [
      { name: 'offset', schema: { type: 'integer', minimum: 0, default: 0 }, description: 'From 0.' },
      { name: 'limit', schema: { type: 'integer', minimum: 1, maximum: 100, default: 50 }, description: 'Page size.' },
    ],
  },
} as const;

type Form = (typeof forms)[ContextBase];

const rateHeaders = rateLimitHeaders({
  limit: "The principal's hourly allowance.",
  remaining: 'What is left of it.',
  reset: 'Seconds until it is whole again.',
});

const errorWords: Record<ContextErrorName, string> = {
  bad_request: 'Bad input (types, fields, sizes, text, query, body not JSON); nothing changed.',
  unauthorized: 'No valid API key, access token or session.',
  forbidden: 'Missing scope, CSRF check failed, or a route for signed-in people only.',
  not_found: "No such route, or no such resource of the caller's.",
  rate_limited: "Over the plan's hourly rate; Retry-After says when to retry.",
  internal_error: 'The service could not complete the request; retry.',
};

/** Every route can answer every status of this API (docs/contexts.md). */
const everyError = new Map(Object.entries(contextErrorNames).map(([status, name]) => [Number(status), [name]]));

export function contextOpenApiDocument(base: ContextBase, url: string) {
  const form = forms[base];
  const context: DocumentFace<ContextErrorName> = {
    routes: contextRoutes.map((route) => contextRoute(route, form)),
    errors: { schema: 'Error', describe: (names) => names.map((n) => errorWords[n]).join(' ') },
  };
  const faces: DocumentFace[] = [context];
  // The web document also lists device sync's routes on {web_url}/api/sync/ (docs/sync.md), each with its server.
  if (base === 'web') faces.push(syncFace(url.replace(/\/api\/v1$/, '')));
  return openApiDocument({
    info: {
      title: form.title,
      version: '1.0.0',
      description:
        'Context files, skills and API keys of one principal (docs/contexts.md). Not an agent route: errors are {error, message}. Every authenticated answer carries X-RateLimit-Limit, -Remaining and -Reset.',
    },
    servers: [{ url }],
    security: [{ apiKey: [] }, { oauth: ['read:context'] }, { oauth: ['write:context'] }, { session: [] }],
    paths: openApiPaths(faces),
    components: {
      securitySchemes: {
        apiKey: { type: 'http', scheme: 'bearer', description: 'An API key (asyk_...), issued on the account page.' },
        oauth: {
          type: 'http',
          scheme: 'bearer',
          description: 'An OAuth access token (asyo_...) with read:context or write:context.',
        },
        session: {
          type: 'apiKey',
          in: 'cookie',
          name: 'assay_session',
          description: 'The web session; writes also need X-CSRF-Token equal to the assay_csrf cookie.',
        },
      },
      schemas: {
        Error: {
          type: 'object',
          required: ['error', 'message'],
          additionalProperties: false,
          properties: {
            error: { type: 'string', enum: Object.values(contextErrorNames) },
            message: { type: 'string' },
          },
        },
        ...(base === 'web' ? syncErrorSchemas : {}),
      },
    },
  });
}

function contextRoute(route: ContextRoute, form: Form): DocumentedRoute<ContextErrorName> {
  const answer = isListAnswer(route.answer)
    ? form.envelope(route.answer.list, route.answer.item)
    : { type: 'object', required: ['data'], properties: { data: route.answer } };
  const responses: Record<number, DocumentedResponse> = {
    [route.status]: { description: route.summary, headers: rateHeaders, content: jsonContent(answer) },
  };
  // Publishing a file already published answers 200 with it, beside the row's 201.
  if (route.path === '/contexts/{id}/publish') {
    responses[200] = { description: 'Already published: the file as it is.', content: jsonContent(answer) };
  }
  return {
    method: route.method,
    path: route.path,
    operationId: operationIdOf(`${route.method.toLowerCase()} ${route.path.replace(/\{id\}/g, 'ById')}`),
    summary: route.summary,
    // The document's default lets read:context in; a write needs write:context (or a key or session), as served.
    security:
      route.by === 'session'
        ? [{ session: [] }]
        : route.write
          ? [{ apiKey: [] }, { oauth: ['write:context'] }, { session: [] }]
          : undefined,
    extensions: { 'x-scope': route.write ? 'write:context' : 'read:context' },
    parameters: [
      ...pathParameters(route.path, { id: { type: 'string', format: 'uuid' } }),
      ...(isListAnswer(route.answer) ? form.paging.map((p) => ({ ...p, in: 'query' as const, required: false })) : []),
      ...(route.query ?? []).map((q) => parameter('query', q.name, false, q.schema)),
    ],
    ...(route.body ? { body: jsonContent(route.body) } : {}),
    responses,
    errors: everyError,
  };
}
