// Timing of MCP sessions, shared by the gateway (which expires idle sessions) and storage (which sizes the bucket's
// max age so the server discards what the gateway already treats as ended).

/**
 * A session's last-seen time is written back at most this often, so a busy session costs one KV write per interval
 * rather than one per request. A session may therefore end up to this much before its idle time is fully over.
 */
export function mcpSessionTouchEveryMs(idleMs: number): number {
  return Math.min(60_000, Math.floor(idleMs / 10));
}

/**
 * Max age of the sessions bucket: the idle time, one touch interval and a minute for clock differences between
 * gateways and the NATS server. Entries older than that can only be ended sessions, so JetStream may drop them.
 */
export function mcpSessionBucketMaxAgeMs(idleMs: number): number {
  return idleMs + mcpSessionTouchEveryMs(idleMs) + 60_000;
}
