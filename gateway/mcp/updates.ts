// Resource update notifications on the event streams this gateway process holds (docs/mcp.md, Events as a
// resource). A session's subscriptions live in its KV record; the gateway holding its stream keeps what it last
// learned of them, newest revision first, from three sources: the record read when the stream opened (and once more
// right after, for a change made meanwhile), the notice a subscribe or unsubscribe publishes through any gateway, and
// the check of open streams every 5 s. While at least one stream is subscribed to assay://events, the process listens
// on `<ns>.notice.events` (one NATS subscription, dropped with the last such stream), whose messages name the
// principals a projected batch gave events, and sends each of their streams `notifications/resources/updated`, at
// most once per `updateEveryMsMin`.
import type { Msg, NatsConnection, Subscription } from '@nats-io/nats-core';
import type { Logger } from 'pino';
import Type from 'typebox';
import { Value } from 'typebox/value';
import { eventsNoticePrincipals, type Names } from '../../contracts/index.ts';

/** A session's subscriptions as of one revision of its record. */
export interface SubscriptionState {
  revision: number;
  subscriptions: string[];
}

/** An open event stream that can be sent notifications. */
export interface UpdateTarget {
  principalId: string;
  sessionId: string;
  /** Send `notifications/resources/updated` for `uri` on the stream (dropped if the stream is gone). */
  notify(uri: string): void;
}

/**
 * Bursts are coalesced: a stream gets at most one notification per this interval (the first at once, one more at
 * the end of the interval if anything arrived meanwhile). A client re-reads the resource on each, and one read
 * shows every event of the burst.
 */
export const updateEveryMsMin = 100;

interface Watch {
  target: UpdateTarget;
  /** Revision of the state last applied; -1 before any. */
  revision: number;
  subscribed: boolean;
  /** performance.now() of the last notification sent: pacing needs a monotonic clock, not the business clock. */
  lastSentMs: number;
  timer: NodeJS.Timeout | null;
}

export interface ResourceUpdatesDeps {
  nc: NatsConnection;
  names: Names;
  log: Logger;
  /** The one resource that can be subscribed to (assay://events). */
  uri: string;
}

export class ResourceUpdates {
  /** One per open stream, by `<principalId>.<sessionId>` (a process holds one stream per session). */
  private readonly watches = new Map<string, Watch>();
  /** The subscribed streams of each principal listened for. */
  private readonly listeners = new Map<string, Set<Watch>>();
  /** The events notices, while `listeners` is not empty. */
  private eventNotices: Subscription | null = null;
  private readonly sessionNotices: Subscription;

  constructor(private readonly d: ResourceUpdatesDeps) {
    this.sessionNotices = d.nc.subscribe(d.names.notices.anyMcpSession, {
      callback: (err, msg) => {
        if (!err) this.onSessionNotice(msg);
      },
    });
  }

  /** A stream opened, for a session read with `state`. */
  add(target: UpdateTarget, state: SubscriptionState): void {
    const k = watchKey(target.principalId, target.sessionId);
    const previous = this.watches.get(k);
    if (previous) this.drop(previous);
    this.watches.set(k, { target, revision: -1, subscribed: false, lastSentMs: -Infinity, timer: null });
    this.apply(target.principalId, target.sessionId, state);
  }

  /** The stream ended (only if it is still the one registered for its session). */
  remove(target: UpdateTarget): void {
    const k = watchKey(target.principalId, target.sessionId);
    const w = this.watches.get(k);
    if (w?.target !== target) return;
    this.drop(w);
    this.watches.delete(k);
  }

  /** What the store says of a session now; ignored unless newer than what its stream here knows. */
  apply(principalId: string, sessionId: string, state: SubscriptionState): void {
    const w = this.watches.get(watchKey(principalId, sessionId));
    if (!w || state.revision <= w.revision) return;
    w.revision = state.revision;
    const subscribed = state.subscriptions.includes(this.d.uri);
    if (subscribed === w.subscribed) return;
    w.subscribed = subscribed;
    if (subscribed) this.listen(w);
    else this.unlisten(w);
  }

  /**
   * A session's subscriptions were written: apply them here and tell every other gateway. A lost notice leaves a
   * stream elsewhere on the old state until its next check (5 s).
   */
  changed(principalId: string, sessionId: string, state: SubscriptionState): void {
    this.apply(principalId, sessionId, state);
    try {
      this.d.nc.publish(this.d.names.notices.mcpSession(principalId, sessionId), JSON.stringify(state));
    } catch (err) {
      this.d.log.warn({ err }, 'publishing an MCP subscription change failed');
    }
  }

  close(): void {
    for (const w of this.watches.values()) this.drop(w);
    this.watches.clear();
    unsubscribe(this.sessionNotices);
  }

  private onEventsNotice(msg: Msg): void {
    for (const principalId of eventsNoticePrincipals(msg.string())) {
      const watches = this.listeners.get(principalId);
      if (watches) for (const w of watches) this.poke(w);
    }
  }

  private onSessionNotice(msg: Msg): void {
    const tokens = msg.subject.split('.');
    const sessionId = tokens.at(-1)!;
    const principalId = tokens.at(-2)!;
    if (!this.watches.has(watchKey(principalId, sessionId))) return;
    let state: unknown;
    try {
      state = msg.json();
    } catch {
      return;
    }
    if (!isState(state)) return;
    this.apply(principalId, sessionId, state);
  }

  private listen(w: Watch): void {
    if (!this.eventNotices) {
      try {
        this.eventNotices = this.d.nc.subscribe(this.d.names.notices.events, {
          callback: (err, msg) => {
            if (!err) this.onEventsNotice(msg);
          },
        });
      } catch (err) {
        // A closed connection: the gateway is stopping, and its streams with it.
        this.d.log.warn({ err }, 'listening for event notices failed');
        return;
      }
    }
    const principalId = w.target.principalId;
    let watches = this.listeners.get(principalId);
    if (!watches) {
      watches = new Set<Watch>();
      this.listeners.set(principalId, watches);
    }
    watches.add(w);
  }

  private unlisten(w: Watch): void {
    if (w.timer) clearTimeout(w.timer);
    w.timer = null;
    const watches = this.listeners.get(w.target.principalId);
    if (!watches?.delete(w)) return;
    if (watches.size > 0) return;
    this.listeners.delete(w.target.principalId);
    if (this.listeners.size > 0 || !this.eventNotices) return;
    unsubscribe(this.eventNotices);
    this.eventNotices = null;
  }

  private drop(w: Watch): void {
    w.subscribed = false;
    this.unlisten(w);
  }

  /** New events for the stream's principal: notify now, or once at the end of the current interval. */
  private poke(w: Watch): void {
    if (w.timer || !w.subscribed) return;
    const waitMs = w.lastSentMs + updateEveryMsMin - performance.now();
    if (waitMs <= 0) {
      this.send(w);
      return;
    }
    w.timer = setTimeout(() => {
      w.timer = null;
      if (w.subscribed) this.send(w);
    }, waitMs);
  }

  private send(w: Watch): void {
    w.lastSentMs = performance.now();
    w.target.notify(this.d.uri);
  }
}

/** Unsubscribing on a connection already closed has nothing left to do. */
function unsubscribe(sub: Subscription): void {
  try {
    sub.unsubscribe();
  } catch {
    // closed
  }
}

function watchKey(principalId: string, sessionId: string): string {
  return `${principalId}.${sessionId}`;
}

/** A session's subscriptions as its KV record holds them. */
const StoredState = Type.Object({
  revision: Type.Integer({ minimum: Number.MIN_SAFE_INTEGER, maximum: Number.MAX_SAFE_INTEGER }),
  subscriptions: Type.Array(Type.String()),
});

function isState(v: unknown): v is SubscriptionState {
  return Value.Check(StoredState, v);
}
