// A JSON request body for the faces whose errors are `{error, message}` (the context-file API, device sync):
// parsed, then checked against its TypeBox schema, with the first problem worded for the client.
import type { TLocalizedValidationError } from 'typebox/error';
import { parseJsonText } from '../../contracts/index.ts';

/** The body parsed, or an Error saying why it cannot be taken (not JSON, nested too deep, text no store holds). */
export function parseJson(text: string): unknown | Error {
  if (text.trim() === '') return new Error('the body is empty; send a JSON object');
  const parsed = parseJsonText(text, 'the body');
  return parsed.ok ? parsed.value : new Error(parsed.problem);
}

/** The first thing wrong with a body, naming the field. */
export function schemaProblem(check: { Errors(v: unknown): TLocalizedValidationError[] }, body: unknown): string {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return 'the body must be a JSON object';
  for (const e of check.Errors(body)) {
    const where = e.instancePath ? e.instancePath.slice(1).replaceAll('/', '.') : 'the body';
    if (e.keyword === 'additionalProperties' && e.params.additionalProperties.length > 0) {
      return `unknown field ${e.params.additionalProperties.join(', ')}`;
    }
    return `${where}: ${e.message || 'is not valid'}`;
  }
  return 'the body is not valid';
}
