// Which address a request came from, for the per-address limits (sign-in, sign-up, device codes, sandbox
// registration). Behind proxies, X-Forwarded-For is a list each proxy appends to; only the entries our own proxies
// appended can be believed, and the client writes whatever it likes to the left of them. So the address is the
// entry the outermost trusted proxy appended: the `hops`-th from the right.
import type { HttpRequest, HttpResponse } from 'uWebSockets.js';

/**
 * The client's address from the X-Forwarded-For entries (every header line, in order, already split), or null when
 * there are fewer entries than trusted proxies (a request that did not come through them all).
 */
export function forwardedClientAddress(entries: readonly string[], hops: number): string | null {
  if (hops < 1 || entries.length < hops) return null;
  const address = entries[entries.length - hops]!.trim();
  return address === '' ? null : address;
}

/** Every X-Forwarded-For entry of a request, across all its header lines, left to right. */
export function forwardedEntries(req: HttpRequest): string[] {
  const entries: string[] = [];
  req.forEach((name, value) => {
    if (name === 'x-forwarded-for') for (const e of value.split(',')) entries.push(e.trim());
  });
  return entries;
}

/** The client's address: the entry the outermost of `hops` trusted proxies appended, else the socket's peer. */
export function clientAddressOf(res: HttpResponse, req: HttpRequest, hops: number): string {
  if (hops > 0) {
    const forwarded = forwardedClientAddress(forwardedEntries(req), hops);
    if (forwarded !== null) return forwarded;
  }
  return Buffer.from(res.getRemoteAddressAsText()).toString();
}
