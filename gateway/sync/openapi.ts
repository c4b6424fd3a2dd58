// Device sync's routes in the web OpenAPI document ({web_url}/api/v1/openapi.json, docs/openapi-contexts-web.json):
// generated from the route table (routes.ts). The routes live under {web_url}/api/sync/, not under the document's
// server ({web_url}/api/v1), so each path names its own server (OpenAPI 3.1 path-level `servers`).
import { syncErrors } from '../../contracts/index.ts';
import { type SyncRoute, syncRoutePath, syncRoutes } from './routes.ts';

const plain = (schema: unknown) => JSON.parse(JSON.stringify(schema)) as Record<string, unknown>;
const errorRef = { $ref: '#/components/schemas/SyncError' };

const rateHeaders = {
  'X-RateLimit-Limit': { schema: { type: 'integer' }, description: "The size of the principal's sync bucket." },
  'X-RateLimit-Remaining': { schema: { type: 'integer' }, description: 'Whole tokens left in it.' },
  'X-RateLimit-Reset': { schema: { type: 'integer' }, description: 'Seconds until it is full again.' },
};

/** Every sync route answers these (authentication, scope, the limiter, bad input, an outage). */
const common: (keyof typeof syncErrors)[] = [
  'invalid_request',
  'unauthorized',
  'forbidden',
  'not_found',
  'rate_limited',
  'unavailable',
];

const errorWords: Record<keyof typeof syncErrors, string> = {
  invalid_request: 'Bad locator, digest, JSON, schema, query parameter or header; nothing changed.',
  unauthorized: 'No valid OAuth access token of an account.',
  forbidden: 'The token lacks the scope sync.',
  not_found: "No such route, blob, folder or revision of the caller's (another method on a known path adds Allow).",
  missing_blobs: 'Blobs of the snapshot are not uploaded; `missing` lists them.',
  blob_too_large: 'Larger than ASSAY_SYNC_BLOB_BYTES_MAX; `bytes_max`.',
  body_too_large: 'Larger than ASSAY_SYNC_BODY_BYTES_MAX; `bytes_max`.',
  digest_mismatch: 'The body does not hash to the digest in the path; `actual_digest`; nothing stored.',
  idempotency_conflict: 'The Idempotency-Key was used with another body.',
  unsafe_paths: 'Paths or symlinks a restore could not write safely; `findings`; nothing committed.',
  rate_limited: "Over the plan's sync rate; Retry-After says when to retry.",
  unavailable: 'The service could not answer; retry.',
  quota_exceeded: 'The account is full; `quota_bytes`, `used_bytes`.',
};

/** The sync paths (full paths from {web_url}) and the schema of their error body. */
export function syncOpenApiPaths(webUrl: string): {
  paths: Record<string, Record<string, unknown>>;
  schemas: Record<string, unknown>;
} {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of syncRoutes) {
    const path = syncRoutePath(route);
    paths[path] = { servers: [{ url: webUrl }], ...paths[path], [route.method.toLowerCase()]: operation(route) };
  }
  const schemas = {
    SyncError: {
      type: 'object',
      required: ['error', 'message'],
      properties: {
        error: { type: 'string', enum: Object.keys(syncErrors) },
        message: { type: 'string' },
      },
      description: 'A sync error: {error, message}, and for some codes one more field that helps the client act.',
    },
  };
  return { paths, schemas };
}

function operation(route: SyncRoute) {
  const parameters = [
    ...(route.path.includes('{digest}')
      ? [
          {
            name: 'digest',
            in: 'path',
            required: true,
            schema: { type: 'string', pattern: '^sha256:[0-9a-f]{64}$' },
          },
        ]
      : []),
    ...route.query.map((q) => ({
      name: q.name,
      in: 'query',
      required: q.required,
      description: q.description,
      schema: plain(q.schema),
    })),
    ...(route.headers ?? []).map((h) => ({
      name: h.name,
      in: 'header',
      required: h.required,
      description: h.description,
      schema: { type: 'string' },
    })),
  ];
  const content = (schema: SyncRoute['answers'][number]['schema']) =>
    schema === 'bytes'
      ? { 'application/octet-stream': { schema: { type: 'string', contentMediaType: 'application/octet-stream' } } }
      : { 'application/json': { schema: plain(schema) } };
  const errors = [...new Set([...common, ...route.errors])].sort((a, b) => syncErrors[a].status - syncErrors[b].status);
  const byStatus = new Map<number, (keyof typeof syncErrors)[]>();
  for (const e of errors) byStatus.set(syncErrors[e].status, [...(byStatus.get(syncErrors[e].status) ?? []), e]);
  return {
    summary: route.summary,
    operationId: `sync${route.method[0]}${route.method.slice(1).toLowerCase()}${route.path
      .replace('{digest}', 'ByDigest')
      .replace(/(^|\/)(\w)/g, (_, _s: string, c: string) => c.toUpperCase())}`,
    security: [{ oauth: ['sync'] }],
    'x-scope': 'sync',
    ...(parameters.length > 0 ? { parameters } : {}),
    ...(route.body
      ? {
          requestBody: {
            required: true,
            content:
              route.body === 'bytes'
                ? {
                    'application/octet-stream': {
                      schema: { type: 'string', contentMediaType: 'application/octet-stream' },
                    },
                  }
                : { 'application/json': { schema: plain(route.body) } },
          },
        }
      : {}),
    responses: {
      ...Object.fromEntries(
        Object.entries(route.answers).map(([status, a]) => [
          status,
          { description: a.description, headers: rateHeaders, content: content(a.schema) },
        ]),
      ),
      ...Object.fromEntries(
        [...byStatus].map(([status, codes]) => [
          String(status),
          {
            description: codes.map((c) => `${c}: ${errorWords[c]}`).join(' '),
            content: { 'application/json': { schema: errorRef } },
          },
        ]),
      ),
    },
  };
}
