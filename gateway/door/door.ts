// The front door of one listener: one router compiled over every row the listener serves (gateway/door/route.ts),
// nothing matched by string before it. A matched row gets its dialect's words for the HTTP layer's refusals and is
// handed to what serves it; a miss is answered in the dialect of the path space it falls in (the longest declared
// prefix), or, for a known path with another method, in the dialect of the path's rows.
import type { HttpRequest } from 'uWebSockets.js';
import type { Exchange, Reply, TransportRefusal } from '../http/exchange.ts';
import { compileRouter } from '../router.ts';
import { type DialectUrls, type Miss, transportRefusal } from './dialects.ts';
import type { Operation } from '../../contracts/index.ts';
import type { Dialect, Matched, RouteRow } from './route.ts';

/** A part of the path space and the dialect its misses are answered in. */
export interface PathSpace {
  /** A path prefix at a segment boundary: `/api/v1` covers `/api/v1` and `/api/v1/...`, not `/api/v10`. */
  prefix: string;
  dialect: Dialect;
}

export interface DoorOptions {
  rows: readonly RouteRow[];
  spaces: readonly PathSpace[];
  /** The dialect of every path outside the declared spaces. */
  fallback: Dialect;
  urls: DialectUrls;
  /** Serve a row of the agent API's operation table (the pipeline, the MCP endpoint, a document); a door without it has none. */
  operation?: (x: Exchange, req: HttpRequest, op: Operation, m: Matched) => void;
  /** Answer a miss (the face of a dialect may authenticate first: the context-file API does). */
  miss(dialect: Dialect, x: Exchange, req: HttpRequest, miss: Miss): void;
}

export class Door {
  private readonly match: (method: string, path: string) => ReturnType<ReturnType<typeof compileRouter<RouteRow>>>;
  private readonly spaces: readonly PathSpace[];
  private readonly refusals: Record<Dialect, (r: TransportRefusal) => Reply>;

  constructor(private readonly o: DoorOptions) {
    assertRows(o.rows);
    const op = o.rows.find((r) => r.dispatch.kind === 'operation');
    if (op && !o.operation) throw new Error(`${op.method} ${op.path} is an operation, and this door runs none`);
    this.match = compileRouter(o.rows);
    // Longest first, so the first that covers a path is the most specific.
    this.spaces = [...o.spaces].sort((a, b) => b.prefix.length - a.prefix.length);
    const words = (d: Dialect) => (r: TransportRefusal) => transportRefusal(d, r, o.urls);
    this.refusals = {
      agent: words('agent'),
      oauth: words('oauth'),
      page: words('page'),
      context: words('context'),
      export: words('export'),
      sync: words('sync'),
    };
  }

  /** The listener's words for refusals before any route is known (the fallback dialect's). */
  get refusal(): (r: TransportRefusal) => Reply {
    return this.refusals[this.o.fallback];
  }

  get rows(): readonly RouteRow[] {
    return this.o.rows;
  }

  serve(x: Exchange, req: HttpRequest): void {
    const path = req.getUrl();
    const m = this.match(x.method, path);
    if (m.kind === 'found') {
      const row = m.route;
      if (row.dialect !== this.o.fallback) x.refusalWords = this.refusals[row.dialect];
      if (row.dispatch.kind === 'local') row.dispatch.serve(x, req, m);
      else this.o.operation?.(x, req, row.dispatch.op, m);
      return;
    }
    // HEAD answers as GET would, down to the length of the message.
    const method = x.head ? 'GET' : x.method;
    const space = this.spaceOf(path);
    const dialect =
      m.kind === 'wrong_method' ? this.dialectOfPath(path, m.allow, space) : (space?.dialect ?? this.o.fallback);
    if (dialect !== this.o.fallback) x.refusalWords = this.refusals[dialect];
    this.o.miss(dialect, x, req, {
      method,
      path,
      allow: m.kind === 'wrong_method' ? m.allow : null,
      space: space?.prefix ?? null,
    });
  }

  /** The dialect of the rows of a path that exists with other methods. */
  private dialectOfPath(path: string, allow: string, space: PathSpace | null): Dialect {
    const method = allow.split(', ')[0] ?? '';
    const m = this.match(method, path);
    return m.kind === 'found' ? m.route.dialect : (space?.dialect ?? this.o.fallback);
  }

  /** The most specific declared space a path falls in, or null. */
  private spaceOf(path: string): PathSpace | null {
    for (const s of this.spaces) {
      if (path === s.prefix || path.startsWith(s.prefix.endsWith('/') ? s.prefix : `${s.prefix}/`)) return s;
    }
    return null;
  }
}

/**
 * Every row complete and served once: a method and path no two rows share (one would shadow the other), the rows of
 * a path in one dialect (a miss on it is worded once), and schemas for params, query and at least one answer.
 */
export function assertRows(rows: readonly RouteRow[]): void {
  const seen = new Map<string, RouteRow>();
  const dialects = new Map<string, Dialect>();
  for (const row of rows) {
    const key = `${row.method} ${row.path}`;
    if (seen.has(key)) throw new Error(`two routes serve ${key} (faces ${seen.get(key)!.face} and ${row.face})`);
    seen.set(key, row);
    const d = dialects.get(row.path);
    if (d !== undefined && d !== row.dialect) {
      throw new Error(`${row.path} is served in two dialects (${d} and ${row.dialect})`);
    }
    dialects.set(row.path, row.dialect);
    if (row.auth.length === 0) throw new Error(`${key} names no way to authenticate (use 'none' for a public route)`);
    if (Object.keys(row.schemas.responses).length === 0) throw new Error(`${key} declares no answer`);
  }
}
