// Device sync's routes in the web context document ({web_url}/api/v1/openapi.json, docs/openapi-contexts-web.json),
// from its route table (gateway/sync/routes.ts). They live under {web_url}/api/sync/, not under the document's server
// ({web_url}/api/v1), so each path names its own server; their errors are sync's codes, in the SyncError body.
import { syncDigestPattern, syncErrors } from '../../contracts/index.ts';
import { type SyncRoute, syncRoutePath, syncRoutes } from '../sync/routes.ts';
import {
  type Content,
  type DocumentFace,
  type DocumentedRoute,
  errorsByStatus,
  jsonContent,
  operationIdOf,
  parameter,
  pathParameters,
  rateLimitHeaders,
} from './generator.ts';

type SyncErrorCode = keyof typeof syncErrors;

/** The schema of sync's error body, for the document's components. */
export const syncErrorSchemas = {
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

const rateHeaders = rateLimitHeaders({
  limit: "The size of the principal's sync bucket.",
  remaining: 'Whole tokens left in it.',
  reset: 'Seconds until it is full again.',
});

/** Every sync route answers these (authentication, scope, the limiter, bad input, an outage). */
const common: SyncErrorCode[] = [
  'invalid_request',
  'unauthorized',
  'forbidden',
  'not_found',
  'rate_limited',
  'unavailable',
];

const errorWords: Record<SyncErrorCode, string> = {
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

/** The sync routes, served from {web_url}. */
export function syncFace(webUrl: string): DocumentFace<SyncErrorCode> {
  return {
    routes: syncRoutes.map(syncRoute),
    errors: {
      schema: 'SyncError',
      describe: (codes) => codes.map((c) => `${c}: ${errorWords[c]}`).join(' '),
    },
    server: webUrl,
  };
}

const payload = (p: SyncRoute['answers'][number]['schema']): Content =>
  p === 'bytes'
    ? { 'application/octet-stream': { schema: { type: 'string', contentMediaType: 'application/octet-stream' } } }
    : jsonContent(p);

function syncRoute(route: SyncRoute): DocumentedRoute<SyncErrorCode> {
  return {
    method: route.method,
    path: syncRoutePath(route),
    operationId: operationIdOf(`sync ${route.method.toLowerCase()} ${route.path.replace('{digest}', 'ByDigest')}`),
    summary: route.summary,
    security: [{ oauth: ['sync'] }],
    extensions: { 'x-scope': 'sync' },
    parameters: [
      ...pathParameters(route.path, { digest: { type: 'string', pattern: syncDigestPattern.source } }),
      ...route.query.map((q) => parameter('query', q.name, q.required, q.schema, q.description)),
      ...(route.headers ?? []).map((h) => parameter('header', h.name, h.required, { type: 'string' }, h.description)),
    ],
    ...(route.body ? { body: payload(route.body) } : {}),
    responses: Object.fromEntries(
      Object.entries(route.answers).map(([status, a]) => [
        status,
        { description: a.description, headers: rateHeaders, content: payload(a.schema) },
      ]),
    ),
    errors: errorsByStatus(new Set([...common, ...route.errors]), (c) => syncErrors[c].status),
  };
}
