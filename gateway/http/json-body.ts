// A JSON request body for the faces whose errors are `{error, message}` (the context-file API, device sync):
// parsed, then checked against its TypeBox schema, with the first problem worded for the client.

/** The body parsed, or an Error saying why it is not JSON. */
export function parseJson(text: string): unknown | Error {
  if (text.trim() === '') return new Error('the body is empty; send a JSON object');
  try {
    return JSON.parse(text);
  } catch {
    return new Error('the body is not valid JSON');
  }
}

/** The first thing wrong with a body, naming the field. */
export function schemaProblem(check: { Errors(v: unknown): Iterable<unknown> }, body: unknown): string {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return 'the body must be a JSON object';
  for (const e of check.Errors(body) as Iterable<{ instancePath?: string; message?: string; params?: unknown }>) {
    const where = e.instancePath ? e.instancePath.slice(1).replaceAll('/', '.') : 'the body';
    const extra = (e.params as { additionalProperties?: string[] } | undefined)?.additionalProperties;
    if (extra?.length) return `unknown field ${extra.join(', ')}`;
    return `${where}: ${e.message ?? 'is not valid'}`;
  }
  return 'the body is not valid';
}
