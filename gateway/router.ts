// Route matching compiled from the operation table: exact paths by map lookup, parameterised ones by pattern.
import { type Operation, pathParamNames } from '../contracts/index.ts';

export type RouteMatch =
  | { kind: 'found'; op: Operation; params: Record<string, string> }
  | { kind: 'wrong_method'; allow: string[] }
  | { kind: 'none' };

interface Pattern {
  re: RegExp;
  names: string[];
  byMethod: Map<string, Operation>;
}

export function compileRouter(ops: readonly Operation[]) {
  const exact = new Map<string, Map<string, Operation>>();
  const patterns = new Map<string, Pattern>();
  for (const op of ops) {
    const names = pathParamNames(op.path);
    if (names.length === 0) {
      if (!exact.has(op.path)) exact.set(op.path, new Map());
      exact.get(op.path)!.set(op.method, op);
      continue;
    }
    let p = patterns.get(op.path);
    if (!p) {
      const source = op.path
        .split(/\{[a-z_]+\}/)
        .map((part) => part.replace(/[.*+?^$()|[\]\\]/g, '\\$&'))
        .join('([^/]+)');
      p = { re: new RegExp(`^${source}$`), names, byMethod: new Map() };
      patterns.set(op.path, p);
    }
    p.byMethod.set(op.method, op);
  }

  return function match(method: string, path: string): RouteMatch {
    const trimmed = path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
    const byMethod = exact.get(trimmed);
    if (byMethod) {
      const op = byMethod.get(method);
      return op ? { kind: 'found', op, params: {} } : { kind: 'wrong_method', allow: [...byMethod.keys()] };
    }
    for (const p of patterns.values()) {
      const m = p.re.exec(trimmed);
      if (!m) continue;
      const op = p.byMethod.get(method);
      if (!op) return { kind: 'wrong_method', allow: [...p.byMethod.keys()] };
      const params: Record<string, string> = {};
      p.names.forEach((name, i) => {
        params[name] = safeDecode(m[i + 1]!);
      });
      return { kind: 'found', op, params };
    }
    return { kind: 'none' };
  };
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}
