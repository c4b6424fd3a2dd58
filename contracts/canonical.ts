// RFC 8785 JSON Canonicalization Scheme (JCS), the form request hashes and signed documents are computed over. The
// `canonicalize` package does the serialising (keys sorted by UTF-16 code units, no whitespace, numbers and strings
// as ECMAScript writes them). It follows JSON.stringify for values that are not JSON: it drops an undefined
// property, writes an undefined element as null, calls toJSON, and turns a Map into {}. Signing or hashing such a
// value would vouch for bytes nobody wrote, so anything that is not plain JSON data is refused first, by path.
import canonicalize from 'canonicalize';

/** The RFC 8785 canonical JSON text of `value`; a TypeError naming the path of any part that is not a JSON value. */
export function canonicalJson(value: unknown): string {
  assertJsonValue(value);
  return canonicalize(value) as string;
}

/** An array or object being walked: its property names (null for an array) and the next child to visit. */
interface Frame {
  container: object;
  keys: string[] | null;
  index: number;
}

/**
 * Throw a TypeError if `root` is not a JSON value: null, a boolean, a finite number, a well-formed string, an array
 * of JSON values, or an object with Object.prototype or no prototype, no toJSON and well-formed property names whose
 * values are JSON values, containing no cycle. Iterative, so hostile nesting cannot overflow the stack.
 */
function assertJsonValue(root: unknown): void {
  const stack: Frame[] = [];
  // The containers on the stack: meeting one of them again inside itself is a cycle. A container shared by two
  // branches is not one, and is serialised twice, as JSON would.
  const open = new Set<object>();
  let value = root;
  for (;;) {
    if (typeof value === 'object' && value !== null) {
      const problem = open.has(value) ? 'is a cycle: an object that contains itself' : containerProblem(value);
      if (problem !== null) refuse(stack, problem);
      stack.push({ container: value, keys: Array.isArray(value) ? null : Object.keys(value), index: 0 });
      open.add(value);
    } else {
      const problem = primitiveProblem(value);
      if (problem !== null) refuse(stack, problem);
    }
    // The next value: the next child of the innermost container that has one left.
    let next = false;
    while (stack.length > 0) {
      const top = stack[stack.length - 1]!;
      if (top.keys === null) {
        const array = top.container as unknown[];
        if (top.index < array.length) {
          value = array[top.index++];
          next = true;
          break;
        }
      } else if (top.index < top.keys.length) {
        const key = top.keys[top.index++]!;
        if (!key.isWellFormed()) refuse(stack, 'is a property name that is not well-formed Unicode (a lone surrogate)');
        value = (top.container as Record<string, unknown>)[key];
        next = true;
        break;
      }
      open.delete(top.container);
      stack.pop();
    }
    if (!next) return;
  }
}

function primitiveProblem(value: unknown): string | null {
  switch (typeof value) {
    case 'string':
      return value.isWellFormed() ? null : 'is a string that is not well-formed Unicode (a lone surrogate)';
    case 'number':
      return Number.isFinite(value) ? null : `is ${value}, which JSON cannot represent`;
    case 'boolean':
    case 'object': // null; other objects are containers
      return null;
    case 'undefined':
      return 'is undefined, which JSON cannot represent (leave an optional property out instead)';
    default:
      // function, symbol, bigint
      return `is a ${typeof value}, which JSON cannot represent`;
  }
}

function containerProblem(value: object): string | null {
  if (!Array.isArray(value)) {
    const proto = Object.getPrototypeOf(value);
    if (proto !== Object.prototype && proto !== null) {
      const name: unknown = typeof proto.constructor === 'function' ? proto.constructor.name : '';
      const what =
        typeof name === 'string' && name !== ''
          ? `an instance of ${name}`
          : 'an object whose prototype is neither Object.prototype nor null';
      return `is ${what}, not a plain object or array`;
    }
  }
  if (typeof (value as { toJSON?: unknown }).toJSON === 'function') {
    return 'has a toJSON method; pass the plain JSON value it stands for instead';
  }
  return null;
}

const identifier = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/** Throw the TypeError, naming the value's path from the root (`$`) as `$.report.claims[2]["a b"]`. */
function refuse(stack: readonly Frame[], problem: string): never {
  let path = '$';
  for (const f of stack) {
    if (f.keys === null) path += `[${f.index - 1}]`;
    else {
      const key = f.keys[f.index - 1]!;
      path += identifier.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`;
    }
  }
  throw new TypeError(`canonical JSON: ${path} ${problem}`);
}
