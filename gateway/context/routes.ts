// The context-file API's routes (docs/contexts.md): one table that drives the face's routing and its OpenAPI
// documents, as the operation table does for the agent API.
import type { TSchema } from 'typebox';
import Type from 'typebox';
import {
  apiKeyNameLengthMax,
  ContextCreateBody,
  ContextPatchBody,
  ContextPublishBody,
  ContextView,
  oauthMessages,
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

/** The error names this API answers with, by status (the spec's list). */
export const contextErrorNames = {
  400: 'bad_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  429: 'rate_limited',
  500: 'internal_error',
} as const;
/** What a list route lists: the name of its array in the `{api_url}/v1` envelope. */
export type ListName = 'contexts' | 'skills' | 'webhooks';

export type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';

export interface ContextRoute {
  method: Method;
  path: string;
  /** Who may call it: any authenticated owner, or only a signed-in session (API keys are managed by people). */
  by: 'any' | 'session';
  write: boolean;
  summary: string;
  body?: TSchema;
  status: 200 | 201;
  /** What `data` holds, or `list` of that resource in the base form's envelope. */
  answer: TSchema | { list: ListName; item: TSchema };
  /** Query parameters other than a list's paging. */
  query?: { name: string; schema: TSchema; description: string }[];
}

export const ApiKeyCreateBody = Type.Object(
  { name: Type.String({ minLength: 1, maxLength: apiKeyNameLengthMax }) },
  { additionalProperties: false },
);

export const contextRoutes: ContextRoute[] = [
  {
    method: 'GET',
    path: '/contexts',
    by: 'any',
    write: false,
    summary: "The caller's context files, newest first (content summarised).",
    status: 200,
    answer: { list: 'contexts', item: ContextView },
  },
  {
    method: 'POST',
    path: '/contexts',
    by: 'any',
    write: true,
    summary: 'Create a context file (private).',
    body: ContextCreateBody,
    status: 201,
    answer: ContextView,
  },
  {
    method: 'GET',
    path: '/contexts/{id}',
    by: 'any',
    write: false,
    summary: "One file with its text: the caller's, or another owner's public one.",
    status: 200,
    answer: ContextView,
  },
  {
    method: 'PATCH',
    path: '/contexts/{id}',
    by: 'any',
    write: true,
    summary: 'Change any of name, content, description, is_public.',
    body: ContextPatchBody,
    status: 200,
    answer: ContextView,
  },
  {
    method: 'DELETE',
    path: '/contexts/{id}',
    by: 'any',
    write: true,
    summary: 'Delete the file; answers it as it was.',
    status: 200,
    answer: ContextView,
  },
  {
    method: 'POST',
    path: '/contexts/{id}/publish',
    by: 'any',
    write: true,
    summary: 'Publish the file to the catalog as an artifact (201; 200 when it already was).',
    body: ContextPublishBody,
    status: 201,
    answer: ContextView,
  },
  {
    method: 'GET',
    path: '/skills',
    by: 'any',
    write: false,
    summary: "The caller's skills, newest first, without templates.",
    status: 200,
    answer: { list: 'skills', item: SkillView },
  },
  {
    method: 'POST',
    path: '/skills',
    by: 'any',
    write: true,
    summary: 'Create a skill: version 1.',
    body: SkillCreateBody,
    status: 201,
    answer: SkillView,
  },
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
  {
    method: 'PATCH',
    path: '/skills/{id}',
    by: 'any',
    write: true,
    summary: 'Change a skill: its next version.',
    body: SkillPatchBody,
    status: 200,
    answer: SkillView,
  },
  {
    method: 'DELETE',
    path: '/skills/{id}',
    by: 'any',
    write: true,
    summary: 'Delete a skill, every version.',
    status: 200,
    answer: SkillView,
  },
  // Running a skill changes nothing, but it may call a model: a write, so read-only tokens cannot spend on it.
  {
    method: 'POST',
    path: '/skills/{id}/execute',
    by: 'any',
    write: true,
    summary: 'Run a skill: variables substituted, context files brought, the executor asked.',
    body: SkillExecuteBody,
    status: 200,
    answer: SkillExecution,
  },
  {
    method: 'GET',
    path: '/webhooks',
    by: 'any',
    write: false,
    summary: "The caller's webhooks, newest first, without secrets.",
    status: 200,
    answer: { list: 'webhooks', item: WebhookView },
  },
  {
    method: 'POST',
    path: '/webhooks',
    by: 'any',
    write: true,
    summary: 'Register a webhook: an https URL whose host resolves to public addresses; the secret is shown once.',
    body: WebhookCreateBody,
    status: 201,
    answer: WebhookView,
  },
  {
    method: 'GET',
    path: '/webhooks/{id}',
    by: 'any',
    write: false,
    summary: 'One webhook, without its secret.',
    status: 200,
    answer: WebhookView,
  },
  {
    method: 'PATCH',
    path: '/webhooks/{id}',
    by: 'any',
    write: true,
    summary: 'Change name, url, events or is_active (true re-enables a disabled webhook).',
    body: WebhookPatchBody,
    status: 200,
    answer: WebhookView,
  },
  {
    method: 'DELETE',
    path: '/webhooks/{id}',
    by: 'any',
    write: true,
    summary: 'Delete a webhook; its pending deliveries are cancelled.',
    status: 200,
    answer: WebhookView,
  },
  {
    method: 'POST',
    path: '/webhooks/{id}/rotate-secret',
    by: 'any',
    write: true,
    summary: 'A new signing secret (shown once); the previous one keeps signing beside it for 24 hours.',
    status: 200,
    answer: WebhookView,
  },
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
  {
    method: 'GET',
    path: '/api-keys',
    by: 'session',
    write: false,
    summary: "The signed-in person's API keys (never the keys themselves).",
    status: 200,
    answer: oauthMessages.apiKeyList.reply,
  },
  {
    method: 'POST',
    path: '/api-keys',
    by: 'session',
    write: true,
    summary: 'Issue an API key; the key is in this answer only.',
    body: ApiKeyCreateBody,
    status: 201,
    answer: oauthMessages.apiKeyCreate.reply,
  },
  {
    method: 'DELETE',
    path: '/api-keys/{id}',
    by: 'session',
    write: true,
    summary: 'Revoke an API key: it stops working with the next request.',
    status: 200,
    answer: oauthMessages.apiKeyRevoke.reply,
  },
];
