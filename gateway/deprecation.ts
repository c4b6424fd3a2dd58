// A deprecated operation on the wire (docs/deprecation.md): the Deprecation (RFC 9745), Sunset (RFC 8594) and Link
// headers every REST response of it carries, the same values in an MCP tool result's _meta, and the 404 it answers
// from its sunset on. Computed once per operation when the gateway starts, never per request.
import {
  deprecationInstants,
  deprecationPolicyPath,
  type Operation,
  type OperationDeprecation,
} from '../contracts/index.ts';

/** Response headers, named in lower case as the exchange writes them. */
export type DeprecationHeaders = { deprecation: string; sunset: string; link: string };

export interface Deprecation {
  headers: Readonly<DeprecationHeaders>;
  /** The same values for an MCP tool result's _meta. */
  meta: Readonly<Record<string, string>>;
  /** From this instant on the operation answers 404 not_found with `goneMessage`. */
  sunsetMs: number;
  goneMessage: string;
}

/** The header values of a deprecation: `@<unix seconds>` (a structured-field date) and an IMF-fixdate. */
export function deprecationHeaders(d: OperationDeprecation, baseUrl: string): DeprecationHeaders {
  const { sinceMs, sunsetMs } = deprecationInstants(d);
  return {
    deprecation: `@${sinceMs / 1000}`,
    sunset: new Date(sunsetMs).toUTCString(),
    link: `<${baseUrl}${deprecationPolicyPath}>; rel="deprecation"; type="text/markdown"`,
  };
}

/** What the gateway sends for one operation of `table`, or null when it is not deprecated. */
export function deprecationOf(op: Operation, table: readonly Operation[], baseUrl: string): Deprecation | null {
  const d = op.deprecated;
  if (!d) return null;
  const headers = deprecationHeaders(d, baseUrl);
  const { sunsetMs } = deprecationInstants(d);
  const replacement = d.replacement === undefined ? undefined : table.find((r) => r.id === d.replacement);
  const instead = replacement
    ? `; use ${replacement.method} ${replacement.path}${replacement.tool ? ` (tool ${replacement.tool})` : ''} instead`
    : '';
  return {
    headers,
    meta: {
      'assay/deprecation': headers.deprecation,
      'assay/sunset': headers.sunset,
      'assay/deprecation_policy': `${baseUrl}${deprecationPolicyPath}`,
    },
    sunsetMs,
    goneMessage: `${op.method} ${op.path} was removed on ${d.sunset} (deprecated since ${d.since})${instead}`,
  };
}

/** The deprecations of a table by operation id; empty when nothing is deprecated. */
export function deprecationsOf(table: readonly Operation[], baseUrl: string): Map<string, Deprecation> {
  const out = new Map<string, Deprecation>();
  for (const op of table) {
    const d = deprecationOf(op, table, baseUrl);
    if (d) out.set(op.id, d);
  }
  return out;
}

/** Response headers with a deprecation's added; a Link already there is kept (RFC 8288 allows several). */
export function withDeprecationHeaders(
  headers: Readonly<Record<string, string>>,
  d: Deprecation,
): Record<string, string> {
  const link = headers.link ? `${headers.link}, ${d.headers.link}` : d.headers.link;
  return { ...headers, ...d.headers, link };
}
