// The context-file API's OpenAPI 3.1 documents, one per base form (docs/contexts.md): the routes are the same, the
// list envelope and its paging are the base form's. Generated from the route table (routes.ts).
import type { ContextBase } from './face.ts';
import { syncOpenApiPaths } from '../sync/openapi.ts';
import { type ContextRoute, contextErrorNames, contextRoutes } from './routes.ts';

const plain = (schema: unknown) => JSON.parse(JSON.stringify(schema)) as Record<string, unknown>;
const errorRef = { $ref: '#/components/schemas/Error' };

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
          properties: { total: { type: 'integer' }, page: { type: 'integer' }, limit: { type: 'integer' } },
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
          properties: {
            total: { type: 'integer' },
            limit: { type: 'integer' },
            offset: { type: 'integer' },
            hasMore: { type: 'boolean' },
          },
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

const rateHeaders = {
  'X-RateLimit-Limit': { schema: { type: 'integer' }, description: "The principal's hourly allowance." },
  'X-RateLimit-Remaining': { schema: { type: 'integer' }, description: 'What is left of it.' },
  'X-RateLimit-Reset': { schema: { type: 'integer' }, description: 'Seconds until it is whole again.' },
};

const errorText: Record<keyof typeof contextErrorNames, string> = {
  400: 'Bad input (types, fields, sizes, text, query, body not JSON); nothing changed.',
  401: 'No valid API key, access token or session.',
  403: 'Missing scope, CSRF check failed, or a route for signed-in people only.',
  404: "No such route, or no such resource of the caller's.",
  429: "Over the plan's hourly rate; Retry-After says when to retry.",
  500: 'The service could not complete the request; retry.',
};

export function contextOpenApiDocument(base: ContextBase, url: string) {
  const form = forms[base];
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of contextRoutes) {
    paths[route.path] = { ...paths[route.path], [route.method.toLowerCase()]: operation(route, form) };
  }
  // The web document also lists device sync's routes on {web_url}/api/sync/ (docs/sync.md), each with its server.
  const sync = base === 'web' ? syncOpenApiPaths(url.replace(/\/api\/v1$/, '')) : { paths: {}, schemas: {} };
  Object.assign(paths, sync.paths);
  return {
    openapi: '3.1.0',
    info: {
      title: form.title,
      version: '1.0.0',
      description:
        'Context files, skills and API keys of one principal (docs/contexts.md). Not an agent route: errors are {error, message}. Every authenticated answer carries X-RateLimit-Limit, -Remaining and -Reset.',
    },
    servers: [{ url }],
    security: [{ apiKey: [] }, { oauth: ['read:context'] }, { oauth: ['write:context'] }, { session: [] }],
    paths,
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
        ...sync.schemas,
      },
    },
  };
}

function operation(route: ContextRoute, form: (typeof forms)[ContextBase]) {
  const isList = 'list' in route.answer;
  const answer =
    'list' in route.answer
      ? form.envelope(route.answer.list, plain(route.answer.item))
      : { type: 'object', required: ['data'], properties: { data: plain(route.answer) } };
  const parameters = [
    ...(route.path.includes('{id}')
      ? [{ name: 'id', in: 'path', required: true, schema: { type: 'string', format: 'uuid' } }]
      : []),
    ...(isList ? form.paging.map((p) => ({ ...p, in: 'query', required: false })) : []),
    ...(route.query ?? []).map((q) => ({ name: q.name, in: 'query', required: false, schema: plain(q.schema) })),
  ];
  const errors = Object.fromEntries(
    (Object.keys(contextErrorNames) as unknown as (keyof typeof contextErrorNames)[]).map((status) => [
      String(status),
      { description: errorText[status], content: { 'application/json': { schema: errorRef } } },
    ]),
  );
  return {
    summary: route.summary,
    operationId: `${route.method.toLowerCase()}${route.path.replace(/\{id\}/g, 'ById').replace(/[/-](\w)/g, (_, c: string) => c.toUpperCase())}`,
    // The document's default lets read:context in; a write needs write:context (or a key or session), as served.
    ...(route.by === 'session'
      ? { security: [{ session: [] }] }
      : route.write
        ? { security: [{ apiKey: [] }, { oauth: ['write:context'] }, { session: [] }] }
        : {}),
    ...(route.write ? { 'x-scope': 'write:context' } : { 'x-scope': 'read:context' }),
    ...(parameters.length > 0 ? { parameters } : {}),
    ...(route.body
      ? { requestBody: { required: true, content: { 'application/json': { schema: plain(route.body) } } } }
      : {}),
    responses: {
      [String(route.status)]: {
        description: route.summary,
        headers: rateHeaders,
        content: { 'application/json': { schema: answer } },
      },
      ...(route.path === '/contexts/{id}/publish'
        ? {
            200: {
              description: 'Already published: the file as it is.',
              content: { 'application/json': { schema: answer } },
            },
          }
        : {}),
      ...errors,
    },
  };
}
