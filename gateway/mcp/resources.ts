// MCP resources: the caller's events as `assay://events` (docs/mcp.md, Events as a resource). A read runs the pipeline
// of GET /v1/events (its scope, rate limit and validation) and answers its body as JSON text: without a cursor the
// newest events (the ledger service's `events.latest`, dispatched under that row), with one the page after it,
// exactly what GET /v1/events answers. Refusals are JSON-RPC errors carrying the typed error object as `data`, since
// a resource result has no error form.
import assert from 'node:assert/strict';
import {
  ErrorCode as JsonRpcErrorCode,
  McpError,
  type ReadResourceResult,
  type Resource,
  type ResourceTemplate,
} from '@modelcontextprotocol/sdk/types.js';
import { type InternalOpId, internalOperations, type Operation } from '../../contracts/index.ts';
import type { CallResult } from '../pipeline.ts';

export const eventsUri = 'assay://events';
const eventsMimeType = 'application/json';
/** The operation whose rules a read of the events resource follows. */
const eventsOperationId = 'listEvents';
/** What a read without a cursor dispatches in its place: the newest events rather than the oldest. */
const latestEventsOperation: InternalOpId = 'events.latest';

export const eventsResource: Resource = {
  uri: eventsUri,
  name: 'events',
  title: 'Your events',
  description:
    "The caller's newest events (orders, top-ups, subscriptions, approvals, context files), oldest first, as GET " +
    '/v1/events shows them, and next_cursor to read on from (assay://events?cursor=... or GET /v1/events). ' +
    'Subscribe to be sent notifications/resources/updated on the event stream when new events arrive.',
  mimeType: eventsMimeType,
};

export const eventsTemplate: ResourceTemplate = {
  uriTemplate: `${eventsUri}{?cursor,type,limit}`,
  name: 'events-page',
  title: 'Your events after a cursor',
  description:
    'The page of GET /v1/events with these query parameters: with a cursor, the events after it; without one, ' +
    'the newest (limit of them, of one type if given).',
  mimeType: eventsMimeType,
};

/** The row reads follow, checked at start: it exists, is built, and is served where `events.latest` is. */
export function eventsOperation(ops: readonly Operation[]): Operation {
  const op = ops.find((o) => o.id === eventsOperationId);
  assert.ok(op?.available && op.scope !== null, `the events resource needs the built operation ${eventsOperationId}`);
  const latest = internalOperations.find((o) => o.id === latestEventsOperation)!;
  assert.deepEqual(latest.dispatch, op.dispatch, `${latestEventsOperation} must be served where ${op.id} is`);
  return op;
}

/**
 * What reading `uri` runs: the query of the page and the operation dispatched in the row's place (none: the row's
 * own); null when the URI names no resource of this server, or 'duplicate' when a query parameter repeats.
 */
export function eventsReadOf(
  uri: string,
): { query: Record<string, string>; dispatchAs: InternalOpId | undefined } | null | 'duplicate' {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return null;
  }
  if (url.protocol !== 'assay:' || url.host !== 'events' || url.pathname !== '' || url.hash !== '') return null;
  if (url.username !== '' || url.password !== '') return null;
  const query: Record<string, string> = {};
  for (const [name, value] of url.searchParams) {
    if (Object.hasOwn(query, name)) return 'duplicate';
    query[name] = value;
  }
  return { query, dispatchAs: query.cursor === undefined ? latestEventsOperation : undefined };
}

/** Unknown URIs: -32602 with the URI, as the SDK's own server answers and SEP-2164 settles it (docs/mcp.md). */
export function resourceNotFound(uri: string): McpError {
  return new McpError(JsonRpcErrorCode.InvalidParams, `Resource ${uri} not found`, { uri });
}

/** A refusal as a JSON-RPC error: the typed error object is its `data`. */
export function resourceRefusal(r: CallResult): McpError {
  const code = r.error?.code === 'validation_failed' ? JsonRpcErrorCode.InvalidParams : JsonRpcErrorCode.InternalError;
  return new McpError(code, r.error?.message ?? 'the request was refused', r.body);
}

export function readResult(uri: string, r: CallResult): ReadResourceResult {
  const text =
    typeof r.rawBody === 'string'
      ? r.rawBody
      : r.rawBody
        ? Buffer.from(r.rawBody).toString('utf8')
        : JSON.stringify(r.body);
  return { contents: [{ uri, mimeType: eventsMimeType, text }] };
}
