// The OAuth server's endpoints in the agent API's document, as the web face's routes document them (`doc`): their
// errors are RFC 6749 bodies, listed with each endpoint's answers, not the typed error object of the operations.
import type { WebRoute, WebRouteDoc } from '../web/route.ts';
import { type DocumentFace, type DocumentedRoute, operationIdOf } from './generator.ts';

export function oauthFace(webRoutes: readonly WebRoute[]): DocumentFace {
  return {
    routes: webRoutes.flatMap((route) => (route.doc ? [oauthRoute(route, route.doc)] : [])),
    operationIdFirst: true,
  };
}

function oauthRoute(route: WebRoute, doc: WebRouteDoc): DocumentedRoute {
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
    method: route.method,
    path: route.path,
    operationId: operationIdOf(`oauth ${route.method} ${route.path}`),
    summary: doc.summary,
    description: `Follows ${doc.rfc}. Errors are RFC 6749 bodies {error, error_description} (HTML pages where a person is shown one), not the typed Error object of the agent routes.`,
    security: doc.security === 'initialAccessToken' ? [{ initialAccessToken: [] }] : [],
    parameters: [],
    ...(doc.request ? { body: { [doc.request.media]: { schema: doc.request.schema } } } : {}),
    responses: Object.fromEntries(
      Object.entries({ ...unread, ...doc.responses }).map(([status, r]) => [
        status,
        { description: r.description, ...(r.media ? { content: { [r.media]: { schema: {} } } } : {}) },
      ]),
    ),
  };
}
