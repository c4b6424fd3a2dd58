// What a route of the web face is (its method, path, how its body is read and how the OpenAPI document describes
// it) and what its handler is given: the face's own table (face.ts) and the modules that declare its routes share
// these, so they live apart from both.
import type { Logger } from 'pino';
import type { Config } from '../../contracts/index.ts';
import type { Authenticator } from '../authenticator.ts';
import type { AuthKind } from '../door/route.ts';
import type { GatewayBus } from '../bus.ts';
import type { Pipeline } from '../pipeline.ts';
import type { WebRequest, WebResponse } from './http.ts';

export interface WebContext {
  config: Config;
  log: Logger;
  pipeline: Pipeline;
  /** One internal operation over the bus, its body and answer typed from its row (GatewayBus.ask). */
  ask: GatewayBus['ask'];
  /** Who a request is (gateway/authenticator.ts): the pages read the session cookie through it. */
  auth: Authenticator;
}

export interface WebRoute {
  method: 'GET' | 'POST';
  path: string;
  /** How the body is read: not at all, as text (a form or JSON). */
  body: 'none' | 'text';
  /** How /openapi.json describes the route; pages people use in a browser have none. */
  doc?: WebRouteDoc;
  /**
   * How its errors are worded, when not as webDialect (face.ts) has it: RFC 6749 for a documented protocol endpoint,
   * the typed error object under /api/, HTML otherwise.
   */
  dialect?: 'oauth' | 'agent' | 'page';
  /** How its caller proves who it is, when not as the face's rows have it (a page: the session, if any). */
  auth?: readonly AuthKind[];
  handle(ctx: WebContext, req: WebRequest): Promise<WebResponse>;
}

/** A protocol endpoint in the OpenAPI document: its request and its answers, as the RFC it follows words them. */
export interface WebRouteDoc {
  summary: string;
  /** The RFC (and section) the endpoint follows. */
  rfc: string;
  /** The request body: its media type and JSON Schema (a form's fields are its properties). */
  request?: { media: 'application/x-www-form-urlencoded' | 'application/json'; schema: Record<string, unknown> };
  /** `initialAccessToken`: registration's `Authorization: Bearer asyi_...`; public otherwise. */
  security?: 'initialAccessToken';
  responses: Record<number, { description: string; media?: string }>;
}
