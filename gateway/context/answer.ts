// What the context-file API answers: `{data, ...}` bodies and its own error dialect, `{error, message}` with the
// spec's statuses (400, 401, 403, 404, 429, 500). Shared by the face (gateway/context/face.ts) and the handlers its
// route table declares (gateway/context/routes.ts).
import type { Refusal } from '../../contracts/index.ts';

/** The error names this API answers with, by status (the spec's list). */
export const contextErrorNames = {
  400: 'bad_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  429: 'rate_limited',
  500: 'internal_error',
} as const;

export type ContextStatus = keyof typeof contextErrorNames;

export interface Answer {
  status: number;
  body: unknown;
  headers: Record<string, string>;
}

export const fail = (status: ContextStatus, message: string, headers: Record<string, string> = {}): Answer => ({
  status,
  body: { error: contextErrorNames[status], message },
  headers,
});

/** A success: what the spec's envelope carries under `data`. */
export const data = (status: 200 | 201, value: unknown): Answer => ({ status, body: { data: value }, headers: {} });

export const unavailable = () => fail(500, 'the service is unavailable for a moment; retry');

/** A service's refusal in this API's words. */
export function fromRefusal(r: Refusal): Answer {
  switch (r.error.code) {
    case 'not_found':
      return fail(404, r.error.message);
    case 'validation_failed':
      return fail(400, r.error.message);
    case 'unauthorized':
      return fail(401, r.error.message);
    case 'forbidden':
      return fail(403, r.error.message);
    default:
      return fail(500, r.error.message);
  }
}
