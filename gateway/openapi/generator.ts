// The one OpenAPI 3.1 generator of the gateway. Each face describes its routes as `DocumentedRoute`s (what a route is
// in OpenAPI's terms) and says what its routes share (`DocumentFace`: its error body and words, its own server); this
// module turns them into a document's `paths`, operations, parameters and responses, the same way for every face.
// The faces' modules beside it (agent.ts, oauth.ts, contexts.ts, sync.ts) hold only what differs: their tables'
// adapters, list envelopes and paging, security schemes, titles and servers.
import { pathParamNames } from '../../contracts/index.ts';

/** What a request body or a response carries, by media type. */
export type Content = Record<string, { schema: unknown }>;

export interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header';
  required: boolean;
  description?: string;
  schema: unknown;
}

/** A response other than a typed error; its fields are listed in this order. */
export interface DocumentedResponse {
  description: string;
  headers?: Record<string, unknown>;
  content?: Content;
}

/** One route as a document describes it; `Code` is its face's error codes. */
export interface DocumentedRoute<Code extends string = string> {
  method: string;
  /** The path, relative to the document's server (or to the face's own `server`). */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  /** Marks the operation deprecated, with its dates (and replacement) as extensions (docs/deprecation.md). */
  deprecated?: { since: string; sunset: string; replacement?: string };
  /** Left out when the document's default security applies. */
  security?: readonly Record<string, readonly string[]>[];
  /** `x-` fields, written after the security in the order given. */
  extensions?: Record<`x-${string}`, unknown>;
  /** Path, query and header parameters, in order. */
  parameters: readonly Parameter[];
  /** The request body's content; a route that reads one requires it. */
  body?: Content;
  /** The successes and the other answers that are not the face's typed errors, by status. */
  responses: Record<number, DocumentedResponse>;
  /** The error codes each error status can carry; answered in the face's error body and words. */
  errors?: ReadonlyMap<number, readonly Code[]>;
  /** Headers every response of the route carries, errors too (a deprecated operation's). */
  everyResponseHeaders?: Record<string, unknown>;
}

/** One face's routes in a document, and what they share. */
export interface DocumentFace<Code extends string = string> {
  routes: readonly DocumentedRoute<Code>[];
  /** The component schema of the face's error body, and an error response's words for the codes of its status. */
  errors?: { schema: string; describe(codes: readonly Code[]): string };
  /** The face's base URL when it is not the document's server (OpenAPI 3.1 path-level `servers`). */
  server?: string;
  /**
   * Two habits of the published documents, kept so they stay byte for byte the same: the agent API's document puts
   * operationId before summary, and its operations say `parameters: []` when they have none.
   */
  operationIdFirst?: boolean;
  emptyParameters?: boolean;
}

/** A document of the fields given, in their order, as plain JSON (TypeBox's symbol keys gone, nothing shared). */
export function openApiDocument(
  fields: Record<'info' | 'servers' | 'paths' | 'components', unknown> & Record<string, unknown>,
) {
  return JSON.parse(JSON.stringify({ openapi: '3.1.0', ...fields })) as Record<string, unknown>;
}

/** The `paths` of a document: each face's routes in order; two methods of one path share its entry. */
export function openApiPaths(faces: readonly DocumentFace[]): Record<string, Record<string, unknown>> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const face of faces) {
    for (const route of face.routes) {
      paths[route.path] = {
        ...(face.server ? { servers: [{ url: face.server }] } : {}),
        ...paths[route.path],
        [route.method.toLowerCase()]: operationObject(route, face),
      };
    }
  }
  return paths;
}

function operationObject(route: DocumentedRoute, face: DocumentFace) {
  const responses: Record<string, DocumentedResponse> = { ...route.responses };
  for (const [status, codes] of route.errors ?? []) {
    if (!face.errors) throw new Error(`${route.method} ${route.path} has typed errors, and its face has no error body`);
    responses[status] = {
      description: face.errors.describe(codes),
      content: jsonContent({ $ref: `#/components/schemas/${face.errors.schema}` }),
    };
  }
  if (route.everyResponseHeaders) {
    for (const [status, r] of Object.entries(responses)) {
      responses[status] = { ...r, headers: { ...r.headers, ...route.everyResponseHeaders } };
    }
  }
  const d = route.deprecated;
  return {
    ...(face.operationIdFirst
      ? { operationId: route.operationId, summary: route.summary }
      : { summary: route.summary, operationId: route.operationId }),
    ...(route.description ? { description: route.description } : {}),
    ...(d
      ? {
          deprecated: true,
          'x-deprecated-since': d.since,
          'x-sunset': d.sunset,
          ...(d.replacement ? { 'x-replacement': d.replacement } : {}),
        }
      : {}),
    ...(route.security ? { security: route.security } : {}),
    ...route.extensions,
    ...(route.parameters.length > 0 || face.emptyParameters ? { parameters: route.parameters } : {}),
    ...(route.body ? { requestBody: { required: true, content: route.body } } : {}),
    responses,
  };
}

/** An operationId from words: each run of other characters dropped, the letter after it upper-cased. */
export const operationIdOf = (words: string) =>
  words.replace(/[^A-Za-z0-9]+(.)?/g, (_, c: string | undefined) => (c ? c.toUpperCase() : ''));

/** A parameter in its usual field order. */
export function parameter(
  where: Parameter['in'],
  name: string,
  required: boolean,
  schema: unknown,
  description?: string,
): Parameter {
  return { name, in: where, required, ...(description === undefined ? {} : { description }), schema };
}

/** A parameter for each `{name}` of a path, its schema from `schemas`. */
export function pathParameters(path: string, schemas: Readonly<Record<string, unknown>>) {
  return pathParamNames(path).map((name) => parameter('path', name, true, schemas[name]));
}

export const jsonContent = (schema: unknown): Content => ({ 'application/json': { schema } });

/** The rate-limit headers of a face's answers, in its words. */
export function rateLimitHeaders(words: { limit: string; remaining: string; reset: string }) {
  return {
    'X-RateLimit-Limit': { schema: { type: 'integer' }, description: words.limit },
    'X-RateLimit-Remaining': { schema: { type: 'integer' }, description: words.remaining },
    'X-RateLimit-Reset': { schema: { type: 'integer' }, description: words.reset },
  };
}

/** Error codes grouped by their status, each group in the order the codes came. */
export function errorsByStatus<Code extends string>(
  codes: Iterable<Code>,
  statusOf: (code: Code) => number,
): Map<number, Code[]> {
  const grouped = new Map<number, Code[]>();
  for (const code of codes) grouped.set(statusOf(code), [...(grouped.get(statusOf(code)) ?? []), code]);
  return grouped;
}
