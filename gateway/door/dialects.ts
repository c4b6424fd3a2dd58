// Each face's error dialect, for the answers the door gives itself: the HTTP layer's refusals (at capacity, body too
// large, too slow, not UTF-8) and a path or method no row serves. One function each, switching on the dialect, so a
// refusal is worded in one place for every face.
import { errorBody, errorTable, type SyncErrorCode, syncErrors, transportStatus } from '../../contracts/index.ts';
import { type Reply, type TransportRefusal, transportRefusalMessage } from '../http/exchange.ts';
import { pageHeaders } from '../web/http.ts';
import { messagePage } from '../web/pages.ts';
import type { Dialect } from './route.ts';

export interface DialectUrls {
  /** Where the typed error object's docs_url points (`{base_url}`). */
  baseUrl: string;
  /** The site the HTML pages link to (`{web_url}`). */
  webUrl: string;
}

const json = (status: number, headers: Record<string, string>, body: unknown): Reply => ({
  status,
  headers,
  contentType: 'application/json',
  body: JSON.stringify(body),
});

const retryAfter = (r: TransportRefusal): Record<string, string> =>
  r.kind === 'at_capacity' ? { 'retry-after': '1' } : {};

function htmlReply(
  webUrl: string,
  status: number,
  title: string,
  message: string,
  headers: Record<string, string>,
): Reply {
  const html = messagePage({ webUrl, signedInAs: null, csrf: '', title, message, link: null });
  return { status, headers: { ...pageHeaders, ...headers }, contentType: 'text/html; charset=utf-8', body: html };
}

/** The HTTP layer's refusal of a request, in the words of the dialect of the route (or path space) it was for. */
export function transportRefusal(dialect: Dialect, r: TransportRefusal, urls: DialectUrls): Reply {
  const message = transportRefusalMessage(r);
  switch (dialect) {
    case 'agent': {
      if (r.kind === 'at_capacity') {
        return json(errorTable.unavailable.status, retryAfter(r), errorBody(urls.baseUrl, 'unavailable', message));
      }
      const status =
        r.kind === 'body_too_large'
          ? transportStatus.bodyTooLarge
          : r.kind === 'body_timeout'
            ? transportStatus.bodyReadTimeout
            : transportStatus.malformedJson;
      return json(status, {}, errorBody(urls.baseUrl, 'validation_failed', message));
    }
    case 'oauth': {
      // RFC 6749 5.2 error bodies; a body refused is an invalid request.
      const [status, error] =
        r.kind === 'at_capacity'
          ? [503, 'temporarily_unavailable']
          : r.kind === 'body_too_large'
            ? [413, 'invalid_request']
            : [400, 'invalid_request'];
      return json(status, { 'cache-control': 'no-store', ...retryAfter(r) }, { error, error_description: message });
    }
    case 'page': {
      if (r.kind === 'at_capacity') {
        return htmlReply(urls.webUrl, 503, 'The service is busy', `${message}.`, retryAfter(r));
      }
      const status = r.kind === 'body_too_large' ? 413 : 400;
      return htmlReply(urls.webUrl, status, 'The form could not be read', `${message}; go back and send it again.`, {});
    }
    case 'context': {
      // The spec's statuses for this API are 400 and 500 only.
      const [status, error] = r.kind === 'at_capacity' ? [500, 'internal_error'] : [400, 'bad_request'];
      return json(status, retryAfter(r), { error, message });
    }
    case 'export': {
      // The export reads no body: only capacity can happen, and it is retryable.
      const [status, error, words] =
        r.kind === 'at_capacity'
          ? [503, 'unavailable', message]
          : [400, 'bad_request', 'the export takes no request body'];
      const headers: Record<string, string> =
        r.kind === 'at_capacity' ? { ...retryAfter(r), 'cache-control': 'no-store' } : {};
      return json(status, headers, { error, message: words });
    }
    case 'sync': {
      const [code, words, extra]: [SyncErrorCode, string, Record<string, unknown>] =
        r.kind === 'at_capacity'
          ? ['unavailable', message, {}]
          : r.kind === 'body_too_large'
            ? ['body_too_large', message, { bytes_max: r.bytesMax }]
            : r.kind === 'body_timeout'
              ? ['invalid_request', `the request body stopped arriving for ${r.timeoutMs} ms`, {}]
              : ['invalid_request', message, {}];
      return json(syncErrors[code].status, retryAfter(r), { error: code, message: words, ...extra });
    }
  }
}

/** What no row serves: a path unknown in its space (`allow` null), or a known path with another method. */
export interface Miss {
  method: string;
  path: string;
  /** The methods the path accepts (the Allow header), or null when no row has the path. */
  allow: string | null;
  /** The prefix of the declared path space the path falls in, or null outside every one. */
  space: string | null;
}

/**
 * A miss in a dialect's words. The agent API, the context-file API, the export and sync answer 404 with Allow (405
 * is not among their statuses); the OAuth endpoints and the pages answer 405 with Allow, as HTTP has it, and 404
 * for a path they do not have.
 */
export function missReply(dialect: Exclude<Dialect, 'context'>, miss: Miss, urls: DialectUrls): Reply {
  const allow: Record<string, string> = miss.allow === null ? {} : { allow: miss.allow };
  const message =
    miss.allow === null
      ? `no route ${miss.method} ${miss.path}`
      : `${miss.method} is not served on ${miss.path}; it accepts ${miss.allow}`;
  switch (dialect) {
    case 'agent':
      return json(404, allow, errorBody(urls.baseUrl, 'not_found', message));
    case 'oauth':
      return json(
        miss.allow === null ? 404 : 405,
        { 'cache-control': 'no-store', ...allow },
        { error: 'invalid_request', error_description: message },
      );
    case 'page':
      return htmlReply(
        urls.webUrl,
        miss.allow === null ? 404 : 405,
        miss.allow === null ? 'No such page' : 'Not a way to open this page',
        miss.allow === null ? 'There is no page at this address.' : `This address takes ${miss.allow} only.`,
        allow,
      );
    case 'export':
      return json(404, allow, { error: 'not_found', message });
    case 'sync':
      return json(404, { 'cache-control': 'no-store', ...allow }, { error: 'not_found', message });
  }
}
