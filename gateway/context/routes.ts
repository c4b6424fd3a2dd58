// The context-file API's routes (docs/contexts.md): one table that declares each route once, its schemas and its
// handler together, and drives the face's routing, its checks and its OpenAPI documents, as the operation table
// does for the agent API. A handler runs once the face has authenticated the caller, spent its rate, checked its
// rights, the path's id and the query, and the body against the row's schema: it is given them typed.
import type { Static, TSchema } from 'typebox';
import Type from 'typebox';
import { Compile } from 'typebox/compile';
import {
  type Answer as Asked,
  apiKeyNameLengthMax,
  ContextCreateBody,
  ContextPatchBody,
  ContextPublishBody,
  ContextView,
  type InternalOpId,
  oauthMessages,
  type RequestOf,
  SkillCreateBody,
  SkillExecuteBody,
  SkillExecution,
  SkillPatchBody,
  SkillView,
  WebhookAttemptView,
  WebhookCreateBody,
  WebhookPatchBody,
  WebhookView,
} from '../../contracts/index.ts';
import { schemaProblem } from '../http/json-body.ts';
import { type Answer, data, fail, fromRefusal } from './answer.ts';

/** What a list route lists: the name of its array in the `{api_url}/v1` envelope. */
export type ListName = 'contexts' | 'skills' | 'webhooks';

/** Which base form a request came in on: it decides the list envelope (docs/contexts.md, Lists). */
export type ContextBase = 'web' | 'api';

export type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';

/** Who is calling: the owner principal, how it proved it, and what it may do. */
export interface ContextCaller {
  principalId: string;
  /** The request's id, carried to every service it asks (logs line up). */
  requestId: string;
  via: 'api_key' | 'oauth' | 'session';
  canRead: boolean;
  canWrite: boolean;
}

/** What a handler is given: the call, checked, and the face's means to answer it. */
export interface ContextCall {
  base: ContextBase;
  who: ContextCaller;
  /** The path's `{id}` (a UUID: the face answered 404 for anything else), or '' on a route without one. */
  id: string;
  query: URLSearchParams;
  /** One internal operation as the caller's principal itself: to its principal actor, or to the op's service. */
  ask<Id extends InternalOpId>(
    op: Id,
    body: RequestOf<Id>['body'],
    o?: { inParts?: boolean; timeoutMs?: number },
  ): Promise<Asked<Id>>;
  /** A list of the caller's, in the base form's envelope and paging. */
  list(what: ListName): Promise<Answer>;
  /** How long a skill may run (ASSAY_SKILL_TIMEOUT_MS and the bus's own wait). */
  skillWaitMs: number;
}

interface RouteMeta {
  method: Method;
  path: string;
  /** Who may call it: any authenticated owner, or only a signed-in session (API keys are managed by people). */
  by: 'any' | 'session';
  write: boolean;
  summary: string;
  status: 200 | 201;
  /** What `data` holds, or `list` of that resource in the base form's envelope. */
  answer: TSchema | { list: ListName; item: TSchema };
  /** Query parameters other than a list's paging. */
  query?: { name: string; schema: TSchema; description: string }[];
}

export interface ContextRoute extends RouteMeta {
  body?: TSchema;
  /** Run the route: `body` is what the request carried (null for none), checked here against `body`. */
  run(c: ContextCall, body: unknown): Promise<Answer>;
}

/** Whether a route answers a list (in the base form's envelope) rather than one value under `data`. */
export function isListAnswer(a: RouteMeta['answer']): a is { list: ListName; item: TSchema } {
  return 'list' in a && 'item' in a;
}

/** A route whose body is checked against `schema` before its handler gets it, typed. */
function withBody<B extends TSchema>(
  meta: RouteMeta,
  schema: B,
  handle: (c: ContextCall, body: Static<B>) => Promise<Answer>,
): ContextRoute {
  const check = Compile(schema);
  return {
    ...meta,
    body: schema,
    run: async (c, body) => (check.Check(body) ? handle(c, body) : fail(400, schemaProblem(check, body))),
  };
}

/** An action route's body: none, or `{}` (a client library that always sends JSON sends that). */
function isEmptyBody(body: unknown): boolean {
  return body === null || (typeof body === 'object' && !Array.isArray(body) && Object.keys(body).length === 0);
}

/** A route that takes no body. */
function noBody(meta: RouteMeta, handle: (c: ContextCall, body: unknown) => Promise<Answer>): ContextRoute {
  return { ...meta, run: handle };
}

/** An ask's answer as `{data}` with `status`, or its refusal in this API's words. */
const answer = <Id extends InternalOpId>(status: 200 | 201, r: Asked<Id>): Answer =>
  r.ok ? data(status, r.body) : fromRefusal(r.reply);

export const ApiKeyCreateBody = Type.Object(
  { name: Type.String({ minLength: 1, maxLength: apiKeyNameLengthMax }) },
  { additionalProperties: false },
);

export const contextRoutes: ContextRoute[] = [
  noBody(
    {
      method: 'GET',
      path: '/contexts',
      by: 'any',
      write: false,
      summary: "The caller's context files, newest first (content summarised).",
      status: 200,
      answer: { list: 'contexts', item: ContextView },
    },
    (c) => c.list('contexts'),
  ),
  withBody(
    {
      method: 'POST',
      path: '/contexts',
      by: 'any',
      write: true,
      summary: 'Create a context file (private).',
      status: 201,
      answer: ContextView,
    },
    ContextCreateBody,
    async (c, body) => answer(201, await c.ask('context.create', body)),
  ),
  noBody(
    {
      method: 'GET',
      path: '/contexts/{id}',
      by: 'any',
      write: false,
      summary: "One file with its text: the caller's, or another owner's public one.",
      status: 200,
      answer: ContextView,
    },
    async (c) => {
      const own = await c.ask('context.get', { id: c.id });
      if (own.ok || own.reply.error.code !== 'not_found') return answer(200, own);
      // Not the caller's: another owner's file, if it is public.
      return answer(200, await c.ask('context.public_get', { id: c.id }));
    },
  ),
  withBody(
    {
      method: 'PATCH',
      path: '/contexts/{id}',
      by: 'any',
      write: true,
      summary: 'Change any of name, content, description, is_public.',
      status: 200,
      answer: ContextView,
    },
    ContextPatchBody,
    async (c, patch) => answer(200, await c.ask('context.update', { id: c.id, patch })),
  ),
  noBody(
    {
      method: 'DELETE',
      path: '/contexts/{id}',
      by: 'any',
      write: true,
      summary: 'Delete the file; answers it as it was.',
      status: 200,
      answer: ContextView,
    },
    async (c) => answer(200, await c.ask('context.delete', { id: c.id })),
  ),
  withBody(
    {
      method: 'POST',
      path: '/contexts/{id}/publish',
      by: 'any',
      write: true,
      summary: 'Publish the file to the catalog as an artifact (201; 200 when it already was).',
      status: 201,
      answer: ContextView,
    },
    ContextPublishBody,
    async (c, publish) => {
      const r = await c.ask('context.publish', { id: c.id, publish });
      return r.ok ? data(r.status === 201 ? 201 : 200, r.body) : fromRefusal(r.reply);
    },
  ),
  noBody(
    {
      method: 'GET',
      path: '/skills',
      by: 'any',
      write: false,
      summary: "The caller's skills, newest first, without templates.",
      status: 200,
      answer: { list: 'skills', item: SkillView },
    },
    (c) => c.list('skills'),
  ),
  withBody(
    {
      method: 'POST',
      path: '/skills',
      by: 'any',
      write: true,
      summary: 'Create a skill: version 1.',
      status: 201,
      answer: SkillView,
    },
    SkillCreateBody,
    async (c, body) => answer(201, await c.ask('skill.create', body)),
  ),
  noBody(
    {
      method: 'GET',
      path: '/skills/{id}',
      by: 'any',
      write: false,
      summary: 'One version of a skill with its template (the newest by default).',
      status: 200,
      answer: SkillView,
      query: [{ name: 'version', schema: Type.Integer({ minimum: 1 }), description: 'An earlier version to read.' }],
    },
    async (c) => {
      const version = c.query.get('version');
      if (version !== null && !/^[1-9]\d{0,8}$/.test(version)) {
        return fail(400, 'version must be a whole number from 1');
      }
      return answer(
        200,
        await c.ask('skill.get', version === null ? { id: c.id } : { id: c.id, version: Number(version) }),
      );
    },
  ),
  withBody(
    {
      method: 'PATCH',
      path: '/skills/{id}',
      by: 'any',
      write: true,
      summary: 'Change a skill: its next version.',
      status: 200,
      answer: SkillView,
    },
    SkillPatchBody,
    async (c, patch) => answer(200, await c.ask('skill.update', { id: c.id, patch })),
  ),
  noBody(
    {
      method: 'DELETE',
      path: '/skills/{id}',
      by: 'any',
      write: true,
      summary: 'Delete a skill, every version.',
      status: 200,
      answer: SkillView,
    },
    async (c) => answer(200, await c.ask('skill.delete', { id: c.id })),
  ),
  // Running a skill changes nothing, but it may call a model: a write, so read-only tokens cannot spend on it.
  withBody(
    {
      method: 'POST',
      path: '/skills/{id}/execute',
      by: 'any',
      write: true,
      summary: 'Run a skill: variables substituted, context files brought, the executor asked.',
      status: 200,
      answer: SkillExecution,
    },
    SkillExecuteBody,
    // The answer may be larger than one NATS message (a skill brings up to 20 files), so it comes in parts; the
    // wait covers the execution's own time limit.
    async (c, body) =>
      answer(
        200,
        await c.ask(
          'skill.execute',
          { id: c.id, input: body.input, variables: body.variables ?? {}, version: body.version },
          { inParts: true, timeoutMs: c.skillWaitMs },
        ),
      ),
  ),
  noBody(
    {
      method: 'GET',
      path: '/webhooks',
      by: 'any',
      write: false,
      summary: "The caller's webhooks, newest first, without secrets.",
      status: 200,
      answer: { list: 'webhooks', item: WebhookView },
    },
    (c) => c.list('webhooks'),
  ),
  withBody(
    {
      method: 'POST',
      path: '/webhooks',
      by: 'any',
      write: true,
      summary: 'Register a webhook: an https URL whose host resolves to public addresses; the secret is shown once.',
      status: 201,
      answer: WebhookView,
    },
    WebhookCreateBody,
    async (c, body) => answer(201, await c.ask('webhook.create', body)),
  ),
  noBody(
    {
      method: 'GET',
      path: '/webhooks/{id}',
      by: 'any',
      write: false,
      summary: 'One webhook, without its secret.',
      status: 200,
      answer: WebhookView,
    },
    async (c) => answer(200, await c.ask('webhook.get', { id: c.id })),
  ),
  withBody(
    {
      method: 'PATCH',
      path: '/webhooks/{id}',
      by: 'any',
      write: true,
      summary: 'Change name, url, events or is_active (true re-enables a disabled webhook).',
      status: 200,
      answer: WebhookView,
    },
    WebhookPatchBody,
    async (c, patch) => answer(200, await c.ask('webhook.update', { id: c.id, patch })),
  ),
  noBody(
    {
      method: 'DELETE',
      path: '/webhooks/{id}',
      by: 'any',
      write: true,
      summary: 'Delete a webhook; its pending deliveries are cancelled.',
      status: 200,
      answer: WebhookView,
    },
    async (c) => answer(200, await c.ask('webhook.delete', { id: c.id })),
  ),
  noBody(
    {
      method: 'POST',
      path: '/webhooks/{id}/rotate-secret',
      by: 'any',
      write: true,
      summary: 'A new signing secret (shown once); the previous one keeps signing beside it for 24 hours.',
      status: 200,
      answer: WebhookView,
    },
    async (c, body) => {
      if (!isEmptyBody(body)) return fail(400, 'send no body, or an empty JSON object');
      return answer(200, await c.ask('webhook.rotate', { id: c.id }));
    },
  ),
  noBody(
    {
      method: 'POST',
      path: '/webhooks/{id}/test',
      by: 'any',
      write: true,
      summary:
        'Send a webhook.test event to this active webhook alone, signed like any delivery (the account page’s button).',
      status: 200,
      answer: WebhookView,
    },
    async (c, body) => {
      if (!isEmptyBody(body)) return fail(400, 'send no body, or an empty JSON object');
      return answer(200, await c.ask('webhook.test', { id: c.id }));
    },
  ),
  noBody(
    {
      method: 'GET',
      path: '/webhooks/{id}/attempts',
      by: 'any',
      write: false,
      summary: "The webhook's newest delivery attempts, newest first.",
      status: 200,
      answer: Type.Array(WebhookAttemptView),
      query: [
        { name: 'limit', schema: Type.Integer({ minimum: 1, maximum: 100 }), description: 'How many (default 50).' },
      ],
    },
    async (c) => {
      const limit = intParam(c.query, 'limit', 50, 1, 100);
      if (typeof limit === 'string') return fail(400, limit);
      // The owner's actor answers 404 for another's id; the attempts come from the webhooks service.
      const own = await c.ask('webhook.get', { id: c.id });
      if (!own.ok) return fromRefusal(own.reply);
      const r = await c.ask('webhook.attempts', { id: c.id, limit });
      return r.ok ? data(200, r.body.items) : fromRefusal(r.reply);
    },
  ),
  noBody(
    {
      method: 'GET',
      path: '/api-keys',
      by: 'session',
      write: false,
      summary: "The signed-in person's API keys (never the keys themselves).",
      status: 200,
      answer: oauthMessages.apiKeyList.reply,
    },
    async (c) => answer(200, await c.ask('oauth.apiKeyList', { principalId: c.who.principalId })),
  ),
  withBody(
    {
      method: 'POST',
      path: '/api-keys',
      by: 'session',
      write: true,
      summary: 'Issue an API key; the key is in this answer only.',
      status: 201,
      answer: oauthMessages.apiKeyCreate.reply,
    },
    ApiKeyCreateBody,
    async (c, { name }) => answer(201, await c.ask('oauth.apiKeyCreate', { principalId: c.who.principalId, name })),
  ),
  noBody(
    {
      method: 'DELETE',
      path: '/api-keys/{id}',
      by: 'session',
      write: true,
      summary: 'Revoke an API key: it stops working with the next request.',
      status: 200,
      answer: oauthMessages.apiKeyRevoke.reply,
    },
    async (c) => answer(200, await c.ask('oauth.apiKeyRevoke', { principalId: c.who.principalId, id: c.id })),
  ),
];

/** A whole-number query parameter within bounds, its default when absent, or why it is refused. */
export function intParam(
  q: URLSearchParams,
  name: string,
  fallback: number,
  min: number,
  max: number,
): number | string {
  const raw = q.get(name);
  if (raw === null) return fallback;
  if (!/^\d{1,10}$/.test(raw)) return `${name} must be a whole number`;
  const n = Number(raw);
  if (n < min || n > max) return `${name} must be from ${min} to ${max}`;
  return n;
}
