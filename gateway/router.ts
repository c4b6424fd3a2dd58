// Route matching compiled from a table of routes (the operation table, or any other face's): exact paths by map
// lookup, parameterised ones by pattern. HEAD is served wherever GET is (RFC 9110 9.3.2), as the GET route; a path
// that exists with other methods answers with the Allow list, computed once here.
import { pathParamNames } from '../contracts/index.ts';

export interface Route {
  method: string;
  /** Path with `{name}` parameters. */
  path: string;
}

export type RouteMatch<R extends Route> =
  | {
      kind: 'found';
      route: R;
      /** Path parameters, percent-decoded. */
      params: Record<string, string>;
      /** Set when a parameter is not valid percent-encoded UTF-8 (its raw text is kept in `params`). */
      problem: string | null;
    }
  | { kind: 'wrong_method'; allow: string }
  | { kind: 'none' };

interface Methods<R> {
  byMethod: Map<string, R>;
  /** The Allow header value: the methods in table order, HEAD after GET. */
  allow: string;
}

interface Pattern<R> extends Methods<R> {
  re: RegExp;
  names: string[];
}

export function compileRouter<R extends Route>(routes: readonly R[]): (method: string, path: string) => RouteMatch<R> {
  const exact = new Map<string, Methods<R>>();
  const patterns = new Map<string, Pattern<R>>();
  for (const route of routes) {
    const names = pathParamNames(route.path);
    let entry: Methods<R> | undefined = names.length === 0 ? exact.get(route.path) : patterns.get(route.path);
    if (!entry) {
      if (names.length === 0) {
        entry = { byMethod: new Map(), allow: '' };
        exact.set(route.path, entry);
      } else {
        const source = route.path
          .split(/\{[a-z_]+\}/)
          .map((part) => part.replace(/[.*+?^$()|[\]\\]/g, '\\$&'))
          .join('([^/]+)');
        const pattern: Pattern<R> = { re: new RegExp(`^${source}$`), names, byMethod: new Map(), allow: '' };
        patterns.set(route.path, pattern);
        entry = pattern;
      }
    }
    entry.byMethod.set(route.method, route);
  }
  for (const entry of [...exact.values(), ...patterns.values()]) {
    entry.allow = [...entry.byMethod.keys()].flatMap((m) => (m === 'GET' ? ['GET', 'HEAD'] : [m])).join(', ');
  }

  return function match(method: string, path: string): RouteMatch<R> {
    const wanted = method === 'HEAD' ? 'GET' : method;
    const trimmed = path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
    const entry = exact.get(trimmed);
    if (entry) {
      const route = entry.byMethod.get(wanted);
      return route ? { kind: 'found', route, params: {}, problem: null } : { kind: 'wrong_method', allow: entry.allow };
    }
    for (const p of patterns.values()) {
      const m = p.re.exec(trimmed);
      if (!m) continue;
      const route = p.byMethod.get(wanted);
      if (!route) return { kind: 'wrong_method', allow: p.allow };
      const params: Record<string, string> = {};
      let problem: string | null = null;
      for (let i = 0; i < p.names.length; i++) {
        const name = p.names[i]!;
        const raw = m[i + 1]!;
        const decoded = decode(raw);
        if (decoded === null) problem ??= `path parameter ${name} is not valid percent-encoded UTF-8`;
        params[name] = decoded ?? raw;
      }
      return { kind: 'found', route, params, problem };
    }
    return { kind: 'none' };
  };
}

/** Percent-decoding as UTF-8; null for a malformed escape or bytes that are not UTF-8. */
function decode(s: string): string | null {
  if (!s.includes('%')) return s;
  try {
    return decodeURIComponent(s);
  } catch {
    return null;
  }
}
