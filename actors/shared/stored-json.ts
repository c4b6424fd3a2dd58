// JSON this service wrote itself (a signed report's body, a stored bundle), read back as the schema of the parts the
// reader uses. It was checked before it was stored, so a value that does not match is a broken invariant: it throws,
// loudly, instead of being cast and read as something it is not.
import type { Static, TSchema } from 'typebox';
import { Value } from 'typebox/value';

export function storedJson<T extends TSchema>(schema: T, text: string, what: string): Static<T> {
  const value: unknown = JSON.parse(text);
  if (!Value.Check(schema, value)) throw new Error(`${what} does not match its schema`);
  return value;
}
