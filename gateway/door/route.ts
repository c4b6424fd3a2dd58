// The one route row every face of the gateway declares its routes as: the agent API and MCP (the operation table),
// the OAuth endpoints and the pages, the context-file API, the OKF export and device sync. One router is compiled
// over the rows (gateway/door/door.ts), and what differs between faces is only what a row says: how the caller
// proves who it is, the scope and rate class it spends, its schemas, its error dialect, and what serves it.
import type { TSchema } from 'typebox';
import Type from 'typebox';
import type { HttpRequest } from 'uWebSockets.js';
import { type Operation, pathParamNames, type RateClass, rateClassOf } from '../../contracts/index.ts';
import type { Exchange } from '../http/exchange.ts';

/** How a route's caller proves who it is; a row lists the kinds it accepts, in the order they are tried. */
export type AuthKind =
  /** An agent's bearer token (ES256 JWT or sandbox token) on an agent route. */
  | 'agent_bearer'
  /** An OAuth access token issued to a client for a person's account. */
  | 'oauth_token'
  /** An API key of the context-file API (a principal acting as itself). */
  | 'api_key'
  /** The web session cookie of a signed-in person. */
  | 'session'
  /** A principal's initial access token (dynamic client registration, RFC 7591). */
  | 'initial_access_token'
  /** Public, or the credential is in the body (an OAuth client at the token endpoint). */
  | 'none';

/**
 * How a route words its errors, 404s and the HTTP layer's refusals: the typed error object (agent API), RFC 6749
 * (OAuth endpoints), an HTML page (pages people use), `{error, message}` (the context-file API, and the OKF export,
 * which answers 503 where the API answers 500), or device sync's codes.
 */
export type Dialect = 'agent' | 'oauth' | 'page' | 'context' | 'export' | 'sync';

/** What a body or an answer is: a JSON value of a schema, raw bytes, an HTML page or a form. */
export type Payload = TSchema | 'bytes' | 'html' | 'form' | 'redirect';

export interface RouteSchemas {
  params: TSchema;
  query: TSchema;
  /** null: the route reads no body. */
  body: Payload | null;
  /** Each success status and what it carries. */
  responses: Readonly<Record<number, Payload>>;
}

/** A request the router matched to a row: the path parameters, percent-decoded, and why one could not be. */
export interface Matched {
  params: Record<string, string>;
  /** Set when a parameter is not valid percent-encoded UTF-8 (its raw text is kept in `params`). */
  problem: string | null;
}

/**
 * What serves a row: an operation of the agent API's table, run by the pipeline (or the MCP endpoint, or a document
 * the gateway serves), or a local handler of the face the row belongs to (a page, a context-file route, a blob
 * stream). A local handler reads what it needs from `req` before its first await (the uWS rule).
 */
export type RouteDispatch =
  | { kind: 'operation'; op: Operation }
  | { kind: 'local'; serve(x: Exchange, req: HttpRequest, m: Matched): void };

export interface RouteRow {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** The whole path on its listener, with `{name}` parameters. */
  path: string;
  /** Which face declared it (for logs, metrics and the documents). */
  face: 'agent' | 'web' | 'context' | 'export' | 'sync' | 'x402';
  dialect: Dialect;
  auth: readonly AuthKind[];
  /** The scope a token needs; null when none is checked (public, or the face's own rule: a session, an API key). */
  scope: string | null;
  /** The rate-limit bucket a call spends from, per principal or per agent; null when the route spends none. */
  rate: { class: RateClass; per: 'agent' | 'principal' } | null;
  schemas: RouteSchemas;
  dispatch: RouteDispatch;
}

/** The params schema of a path: one string per `{name}`. */
export function paramsOf(path: string): TSchema {
  const names = pathParamNames(path);
  return Type.Object(Object.fromEntries(names.map((n) => [n, Type.String()])), { additionalProperties: false });
}

/** A query the route reads as it likes (pages, OAuth endpoints): any names, string values. */
export const AnyQuery = Type.Record(Type.String(), Type.String());
/** A query with no parameters. */
export const NoQuery = Type.Object({}, { additionalProperties: false });

/** A row of the agent API's operation table (REST, the MCP endpoint, the documents) as a route row. */
export function operationRow(op: Operation): RouteRow {
  return {
    method: op.method,
    path: op.path,
    face: 'agent',
    dialect: 'agent',
    auth: op.scope === null ? ['none'] : ['agent_bearer'],
    scope: op.scope,
    // The pipeline spends an agent call's token of the row's class; public rows and the MCP endpoint spend none here.
    rate: op.audience === 'agent' && op.scope !== null ? { class: rateClassOf(op), per: 'agent' } : null,
    schemas: {
      params: op.params,
      query: op.query,
      body: op.body,
      responses: { [op.successStatus]: op.media ? 'bytes' : op.output },
    },
    dispatch: { kind: 'operation', op },
  };
}
