// What text the service accepts and stores. Every string a client sends (bodies, query, path, headers such as
// Idempotency-Key, MCP arguments) must be well-formed Unicode without NUL: PostgreSQL text cannot hold U+0000, and
// RFC 8785 (the canonical form requests are hashed and documents signed in) refuses lone surrogates. A value that
// slipped in anyway (a fact written before this rule) is made storable by `storableText`, never refused by a store.

/**
 * Deepest nesting of arrays and objects accepted in a request value. The deepest schema is three levels; the bound
 * keeps schema validation and error reporting, which recurse, far from their stack limit, and refuses absurd input
 * before anything walks it.
 */
export const jsonDepthMax = 32;

// biome-ignore lint/suspicious/noControlCharactersInRegex: the point of the pattern.
const controlCharacterPattern = /[\u0000-\u001f\u007f]/;

/**
 * Whether a string holds a C0 control character or DEL: never part of a header line (CR and LF would end it) or a
 * path we send anyone to.
 */
export function hasControlCharacter(s: string): boolean {
  return controlCharacterPattern.test(s);
}

/** Why a string cannot be accepted, or null when it can. */
export function textProblem(s: string): string | null {
  if (s.includes('\u0000')) return 'contains the NUL character (U+0000)';
  if (!s.isWellFormed()) return 'is not well-formed Unicode (a lone surrogate)';
  return null;
}

/**
 * The first problem of a JSON value as a request part, or null: nesting deeper than `depthMax`, or a string (value
 * or key) `textProblem` refuses. Iterative, so a hostile depth cannot overflow the stack here. `where` names the
 * part in the message (body, query, ...).
 */
export function jsonValueProblem(value: unknown, where: string, depthMax = jsonDepthMax): string | null {
  const stack: { v: unknown; path: string; depth: number }[] = [{ v: value, path: '', depth: 0 }];
  while (stack.length > 0) {
    const { v, path, depth } = stack.pop()!;
    if (typeof v === 'string') {
      const p = textProblem(v);
      if (p) return `${where}${path} ${p}`;
      continue;
    }
    if (v === null || typeof v !== 'object') continue;
    if (depth >= depthMax) return `${where}${path} is nested deeper than ${depthMax} levels`;
    if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push({ v: v[i], path: `${path}/${i}`, depth: depth + 1 });
      continue;
    }
    for (const [k, child] of Object.entries(v)) {
      const p = textProblem(k);
      if (p) return `${where}${path} has a property name that ${p}`;
      stack.push({ v: child, path: `${path}/${k}`, depth: depth + 1 });
    }
  }
  return null;
}

/** A string any store can hold: NUL and lone surrogates become U+FFFD. Identity for acceptable text. */
export function storableText(s: string): string {
  return textProblem(s) === null ? s : s.toWellFormed().replaceAll('\u0000', '\uFFFD');
}

/**
 * A request body's JSON text parsed, or why it cannot be taken: not JSON, or a value `jsonValueProblem` refuses
 * (nesting deeper than `depthMax`, text no store can hold). The nesting is bounded on the text before it is parsed,
 * so nothing downstream (a schema check, JSON.stringify onto the bus: both recurse) ever walks a hostile depth.
 */
export function parseJsonText(
  text: string,
  where: string,
  depthMax = jsonDepthMax,
): { ok: true; value: unknown } | { ok: false; problem: string; syntax: boolean } {
  if (jsonTextDeeperThan(text, depthMax)) {
    return { ok: false, problem: `${where} is nested deeper than ${depthMax} levels`, syntax: false };
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false, problem: `${where} is not valid JSON`, syntax: true };
  }
  const problem = jsonValueProblem(value, where, depthMax);
  return problem === null ? { ok: true, value } : { ok: false, problem, syntax: false };
}

/** Whether JSON text opens more than `depthMax` arrays or objects inside each other (strings skipped). */
function jsonTextDeeperThan(text: string, depthMax: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > depthMax) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}
