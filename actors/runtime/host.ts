// The actor host: serves the shards it leases. Each actor has a mailbox (its messages run one at a time), its state
// is a fold over its facts on a JetStream subject (from a snapshot when there is one), and every command commits by
// one append that expects the subject's last sequence, so a stale owner can never write over a newer fact.
import { type JetStreamClient, type JetStreamManager, jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { KV } from '@nats-io/kv';
import type { Msg, NatsConnection, Subscription } from '@nats-io/nats-core';
import { setTimeout as delay } from 'node:timers/promises';
import type { Logger } from 'pino';
import {
  type ActorKind,
  actorKinds,
  type Answer as TypedAnswer,
  answerOf,
  assertHandlers,
  type BusReply,
  type BusRequest,
  encodeReply,
  errorReply,
  type HandlerRecord,
  type InternalOpId,
  InProcessTimeout,
  type Names,
  natsFailure,
  type ReceivedReply,
  replyInProcess,
  requiresCaller,
} from '../../contracts/index.ts';
import type { ActorHostSource } from '../../contracts/index.ts';
import type { Context } from '@opentelemetry/api';
import type { Clock } from './clock.ts';
import { ShardLeases, type ShardRef } from './leases.ts';
import { countActorCommand, extractTrace, inSpan, registerActorHost, SpanKind, tracingOn } from './telemetry.ts';
import { busRequest } from './service.ts';

export type Decision<F> =
  | { reply: BusReply }
  /**
   * Append `fact`, answer `reply`, then (when given) run `followUp` as this actor's next command, ahead of its
   * mailbox: work the fact makes due at once (settling a purchase whose report is known), without a bus round trip.
   * A follow-up lost in a crash is the job of whatever recovers such work (the settlement sweeper).
   */
  | { fact: F; reply: BusReply; followUp?: BusRequest }
  /**
   * Ask another actor or service first (the actor's mailbox stays closed meanwhile, so one key is one execution),
   * then decide with its reply. (Named `next`, not `then`: a decision must never look like a promise.)
   */
  | { call: { subject: string; request: BusRequest }; next(reply: BusReply): Decision<F> };

/**
 * Ask an internal operation, then decide with its answer, typed from the operation's row (contracts/ask.ts): the
 * way an actor's decision calls another actor or a service when it reads what comes back.
 */
export function askThen<F, Id extends InternalOpId>(
  subject: string,
  request: BusRequest & { op: Id },
  next: (answer: TypedAnswer<Id>) => Decision<F>,
): Decision<F> {
  return { call: { subject, request }, next: (reply) => next(answerOf(request.op, reply)) };
}

/** Where the actor stands when it decides: its id and the last sequence of its subject folded into its state. */
export interface DecideContext {
  actorId: string;
  seq: number;
}

/** An actor's handler: decide one command against the current state (a reply alone, or a fact and the reply). */
export interface ActorHandler<S, F> {
  req: unknown;
  /** The reply body the operation's row declares (not checked for actors yet: their replies travel in decisions). */
  reply: unknown;
  fn: (state: S, req: this['req'], at: DecideContext) => Decision<F> | Promise<Decision<F>>;
}

/** A handler for every available operation dispatched to actors of kind K, typed from the operation tables. */
export type ActorHandlers<K extends ActorKind, S, F> = HandlerRecord<{ to: 'actor'; kind: K }, ActorHandler<S, F>>;

type AnyHandler = (
  state: unknown,
  req: BusRequest,
  at: DecideContext,
) => Decision<unknown> | Promise<Decision<unknown>>;

/** What one actor kind contributes: how to fold its facts and how to decide its commands. */
export interface ActorBehaviour<K extends ActorKind, S, F extends { id: string }> {
  kind: K;
  stream: string;
  factSubject(actorId: string): string;
  initial(actorId: string): S;
  /**
   * Asserts that `fact` may follow `state`: every invariant the fold checks, without changing anything. The host
   * runs it before appending, so a fact that would break an invariant is refused and never becomes durable.
   */
  check(state: S, fact: F): void;
  /** Fold of one fact at its stream sequence; asserts the kind's invariants and throws when one breaks. */
  apply(state: S, fact: F, seq: number): S;
  handlers: ActorHandlers<K, S, F>;
  /**
   * Runs before every handler; a reply answers the command without it (the principal replays a used
   * Idempotency-Key here).
   */
  intercept?(state: S, req: BusRequest): BusReply | null | Promise<BusReply | null>;
  toSnapshot(state: S): unknown;
  fromSnapshot(data: unknown): S;
  /** Bumped when the snapshot's shape changes: a snapshot of another version is ignored and the facts replayed. */
  snapshotVersion: number;
}

export interface HostOptions {
  nc: NatsConnection;
  names: Names;
  snapshots: KV;
  leasesKv: KV;
  behaviours: ActorBehaviour<any, any, any>[];
  hostId: string;
  clock: Clock;
  log: Logger;
  leaseTtlMs: number;
  leaseRenewMs: number;
  mailboxDepthMax: number;
  snapshotEvery: number;
  actorsCachedMax: number;
  appendTimeoutMs: number;
  /** Deadline of a call an actor makes to another actor or service while deciding. */
  callTimeoutMs: number;
}

export interface Cell {
  key: string;
  id: string;
  shard: number;
  behaviour: ActorBehaviour<any, any, any>;
  state: unknown;
  /** Last sequence of the actor's subject folded into `state`; 0 when it has no facts. */
  seq: number;
  loaded: boolean;
  factsSinceSnapshot: number;
  /** Size of the last snapshot written, in bytes: a large state is snapshotted less often (see maybeSnapshot). */
  lastSnapshotBytes: number;
  /** When the snapshot the state stands on was written (loaded or written since); 0 with none. */
  snapshotAtMs: number;
  /**
   * `answer` sends the reply to whoever asked (a NATS requester, or a gateway of this process); null for a follow-up
   * the actor gave itself: nobody waits for its reply. `trace`: its sender's span.
   */
  queue: { req: BusRequest; answer: Answer | null; trace?: Context }[];
  running: boolean;
}

/** Sends a command's one reply to whoever asked. */
type Answer = (reply: BusReply) => void;

/** The actor a command is for: the last token of its subject, `<ns>.actor.<kind>.<shard>.<id>`. */
export const actorIdOf = (subject: string): string => subject.slice(subject.lastIndexOf('.') + 1);

/** The key of an actor's cell among the host's cells. */
export const cellKey = (kind: string, id: string): string => `${kind}:${id}`;

/**
 * A cached actor, not yet loaded: what the host keeps per actor besides its state. Exported for the memory benchmark
 * (test/bench/actor-memory.ts), which measures cells made exactly as the host makes them.
 */
export function newCell(behaviour: ActorBehaviour<any, any, any>, shard: number, id: string, key: string): Cell {
  return {
    key,
    // The id as part of the key: the one given is a slice of the command's subject, and would keep it in memory.
    id: key.slice(key.length - id.length),
    shard,
    behaviour,
    state: behaviour.initial(id),
    seq: 0,
    loaded: false,
    factsSinceSnapshot: 0,
    lastSnapshotBytes: 0,
    snapshotAtMs: 0,
    queue: [],
    running: false,
  };
}

/** Retries of one command after an append conflict or a lost acknowledgement, before answering unavailable. */
const appendAttemptsMax = 5;
/** An append whose fate stayed unknown through every attempt: an outage, answered unavailable. */
class AppendUnsettled extends Error {}

/** The pause before sending an append whose fate is unknown again (times the attempt). */
const appendRetryMs = 100;

export class ActorHost {
  private readonly cells = new Map<string, Cell>();
  private readonly subs = new Map<string, Subscription>();
  private readonly byKind = new Map<string, ActorBehaviour<any, any, any>>();
  private readonly leases: ShardLeases;
  private readonly unregister: (() => void)[] = [];
  /** Set by stop(): dropping a shard then waits for its commands under way (see dropShard). */
  private stopping = false;
  private js!: JetStreamClient;
  private jsm!: JetStreamManager;

  constructor(private readonly o: HostOptions) {
    for (const b of o.behaviours) {
      assertHandlers({ to: 'actor', kind: b.kind }, b.handlers, `the ${b.kind} actor`);
      this.byKind.set(b.kind, b);
    }
    this.leases = new ShardLeases({
      kv: o.leasesKv,
      hostId: o.hostId,
      pool: 'actors',
      kinds: o.behaviours.map((b) => ({ kind: b.kind, shardCount: actorKinds[b.kind as ActorKind].shardCount })),
      ttlMs: o.leaseTtlMs,
      renewMs: o.leaseRenewMs,
      clock: o.clock,
      log: o.log,
      acquired: async (ref) => this.serveShard(ref),
      released: async (ref) => this.dropShard(ref),
    });
  }

  async start(): Promise<void> {
    this.js = jetstream(this.o.nc, { timeout: this.o.appendTimeoutMs });
    this.jsm = await jetstreamManager(this.o.nc);
    for (const b of this.o.behaviours) this.unregister.push(registerActorHost(this.metricsSource(b.kind)));
    await this.leases.start();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await this.leases.stop();
    for (const u of this.unregister.splice(0)) u();
  }

  /**
   * What a scrape reads of this host, per actor kind (cli/metrics.ts): one pass over the cells per scrape
   * serves all four readings (a scrape asks for them one after another, within the same turn).
   */
  private metricsSource(kind: string): ActorHostSource {
    let read: { atMs: number; activations: number; mailbox: number; oldestSnapshotMs: number } | null = null;
    const reading = () => {
      const now = this.o.clock.nowMs();
      if (read && read.atMs === now) return read;
      let activations = 0;
      let mailbox = 0;
      let oldestSnapshotMs = now;
      for (const c of this.cells.values()) {
        if (c.behaviour.kind !== kind) continue;
        activations++;
        mailbox += c.queue.length;
        if (c.snapshotAtMs > 0 && c.snapshotAtMs < oldestSnapshotMs) oldestSnapshotMs = c.snapshotAtMs;
      }
      read = { atMs: now, activations, mailbox, oldestSnapshotMs };
      return read;
    };
    return {
      kind,
      shardsOwned: () => this.leases.heldShards().filter((r) => r.kind === kind).length,
      activations: () => reading().activations,
      mailboxDepth: () => reading().mailbox,
      oldestSnapshotAgeSeconds: () => (this.o.clock.nowMs() - reading().oldestSnapshotMs) / 1000,
    };
  }

  heldShards(): ShardRef[] {
    return this.leases.heldShards();
  }

  private async serveShard(ref: ShardRef): Promise<void> {
    const behaviour = this.byKind.get(ref.kind)!;
    const subject = this.o.names.actorShardWildcard(behaviour.kind, ref.shard);
    const sub = this.o.nc.subscribe(subject, {
      queue: subject,
      callback: (err, msg) => {
        if (err) this.o.log.error({ err, subject }, 'shard subscription error');
        else this.enqueueMessage(behaviour, ref.shard, msg);
      },
    });
    this.subs.set(`${ref.kind}.${ref.shard}`, sub);
    // Make sure the server has the subscription before we count the shard as served.
    await this.o.nc.flush();
  }

  private async dropShard(ref: ShardRef): Promise<void> {
    const key = `${ref.kind}.${ref.shard}`;
    this.subs.get(key)?.unsubscribe();
    this.subs.delete(key);
    // Cached state of a shard we no longer own may go stale; commands already running finish on their own cells
    // and are still protected by the expected-sequence append.
    const busy: Cell[] = [];
    for (const [k, cell] of this.cells) {
      if (cell.behaviour.kind !== ref.kind || cell.shard !== ref.shard) continue;
      this.cells.delete(k);
      if (cell.running) busy.push(cell);
    }
    // On a graceful stop, let them finish (and answer) before the lease goes to another host, which would otherwise
    // load the actor mid-command and race its append. Bounded, so a stuck command cannot hold a shard. (Not during
    // a tick: a lost lease is someone else's already, and waiting there would delay the renewal of the others.)
    if (!this.stopping) return;
    const deadline = performance.now() + this.o.appendTimeoutMs;
    while (busy.some((c) => c.running) && performance.now() < deadline) await new Promise((r) => setTimeout(r, 5));
  }

  /**
   * A request from the gateway of this process, answered without the round trip through nats-server (the
   * InProcessActors contract): the same mailbox as a message, for a shard this host serves now; null otherwise, and
   * the request goes over NATS.
   */
  answerInProcess(
    subject: string,
    req: BusRequest,
    timeoutMs: number,
    headers?: { get(k: string): string },
  ): Promise<ReceivedReply> | null {
    if (this.stopping) return null;
    const idAt = subject.lastIndexOf('.');
    const shardAt = subject.lastIndexOf('.', idAt - 1);
    const kindAt = subject.lastIndexOf('.', shardAt - 1);
    if (!this.subs.has(subject.slice(kindAt + 1, idAt))) return null;
    const behaviour = this.byKind.get(subject.slice(kindAt + 1, shardAt) as ActorKind);
    if (!behaviour || subject.slice(0, kindAt) !== `${this.o.names.namespace}.actor`) return null;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new InProcessTimeout()), timeoutMs);
      const answer = (reply: BusReply) => {
        clearTimeout(timer);
        resolve(replyInProcess(reply));
      };
      this.enqueue(behaviour, Number(subject.slice(shardAt + 1, idAt)), actorIdOf(subject), req, answer, headers);
    });
  }

  private enqueueMessage(behaviour: ActorBehaviour<any, any, any>, shard: number, msg: Msg): void {
    const answer = (reply: BusReply) => {
      if (msg.reply) msg.respond(encodeReply(reply));
    };
    let req: BusRequest;
    try {
      req = msg.json<BusRequest>();
    } catch {
      answer(errorReply('validation_failed', 'the bus message is not JSON'));
      return;
    }
    this.enqueue(behaviour, shard, actorIdOf(msg.subject), req, answer, msg.headers);
  }

  private enqueue(
    behaviour: ActorBehaviour<any, any, any>,
    shard: number,
    id: string,
    req: BusRequest,
    answer: Answer,
    headers: { get(k: string): string } | undefined,
  ): void {
    const cell = this.cell(behaviour, shard, id);
    if (cell.queue.length >= this.o.mailboxDepthMax) {
      answer(errorReply('unavailable', 'this actor is busy; retry with the same Idempotency-Key', 1));
      return;
    }
    cell.queue.push({ req, answer, ...(tracingOn() ? { trace: extractTrace(headers) } : {}) });
    if (!cell.running) void this.drain(cell);
  }

  private cell(behaviour: ActorBehaviour<any, any, any>, shard: number, id: string): Cell {
    const key = cellKey(behaviour.kind, id);
    let cell = this.cells.get(key);
    if (cell) {
      // Map order is recency order: re-insert on use so eviction takes the least recently used.
      this.cells.delete(key);
      this.cells.set(key, cell);
      return cell;
    }
    cell = newCell(behaviour, shard, id, key);
    this.cells.set(key, cell);
    if (this.cells.size > this.o.actorsCachedMax) this.evict();
    return cell;
  }

  private evict(): void {
    for (const [k, c] of this.cells) {
      if (this.cells.size <= this.o.actorsCachedMax) return;
      if (!c.running && c.queue.length === 0) this.cells.delete(k);
    }
  }

  private async drain(cell: Cell): Promise<void> {
    cell.running = true;
    try {
      for (let next = cell.queue.shift(); next; next = cell.queue.shift()) {
        let reply: BusReply;
        const started = performance.now();
        try {
          const done = await inSpan(
            `${cell.behaviour.kind} ${next.req.op}`,
            SpanKind.SERVER,
            { 'messaging.system': 'nats', 'assay.actor': cell.behaviour.kind, 'assay.operation': next.req.op },
            () => this.handle(cell, next.req),
            next.trace,
          );
          reply = done.reply;
          if (done.followUp) cell.queue.unshift({ req: done.followUp, answer: null });
        } catch (err) {
          // Always reply: a failed command answers unavailable, and its actor reloads from the stream next time.
          // JetStream not answering (a NATS node lost, a leader being elected) is an outage, not a bug: one line
          // without a stack per command, at warn.
          const failure = natsFailure(err);
          if (
            failure === 'no_responders' ||
            failure === 'disconnected' ||
            failure === 'timeout' ||
            err instanceof AppendUnsettled
          )
            this.o.log.warn({ failure, actor: cell.key, op: next.req.op }, 'actor command failed: NATS did not answer');
          else this.o.log.error({ err, actor: cell.key, op: next.req.op }, 'actor command failed');
          cell.loaded = false;
          cell.state = cell.behaviour.initial(cell.id);
          cell.seq = 0;
          reply = errorReply('unavailable', 'the actor could not complete the command; retry with the same key');
        }
        const kind = cell.behaviour.kind;
        countActorCommand(kind, reply.ok ? 'ok' : reply.error.code === 'unavailable' ? 'failed' : 'refused', started);
        if (next.answer) next.answer(reply);
        else if (!reply.ok) this.o.log.warn({ actor: cell.key, op: next.req.op, reply }, 'follow-up command failed');
      }
    } finally {
      cell.running = false;
    }
  }

  private async handle(cell: Cell, req: BusRequest): Promise<{ reply: BusReply; followUp?: BusRequest }> {
    if (!cell.loaded) await this.load(cell);
    const b = cell.behaviour;
    for (let attempt = 0; attempt < appendAttemptsMax; attempt++) {
      let decision = await this.decide(cell, req);
      while ('call' in decision) {
        decision = decision.next(
          await busRequest(this.o.nc, decision.call.subject, decision.call.request, this.o.callTimeoutMs, this.o.log),
        );
      }
      if (!('fact' in decision)) return { reply: decision.reply };
      const fact = decision.fact;
      try {
        b.check(cell.state, fact);
      } catch (err) {
        // A programming error, not the client's: the fact never reaches the stream, so the actor stays usable.
        this.o.log.error({ err, actor: cell.key, op: req.op, requestId: req.requestId }, 'fact refused by invariant');
        return { reply: errorReply('unavailable', 'the command could not be completed; nothing was recorded') };
      }
      if (await this.append(cell, fact)) return decision;
      // Someone appended first (a stale owner, or another host during a handover): the cell has caught up from the
      // stream; decide again. Idempotency records make the second decision a replay.
    }
    return { reply: errorReply('unavailable', 'the actor kept losing append races; retry with the same key') };
  }

  /**
   * Append `fact` right after the cell's last fact: true once it is stored (and applied to the cell), false when
   * another fact took that place first (the cell has caught up to it).
   *
   * Exactly once, even on nats-server 2.9, whose clustered streams check the expected last subject sequence only
   * against what is already stored: two publishes expecting the same sequence can both be stored while the first is
   * still being replicated (nats-server issue 4320), and a publish that times out under a slow or lost leader may be
   * exactly that. So an append (a) carries a message id naming its place, the subject and the sequence it follows,
   * which the server's duplicate detection holds from the moment it accepts the first publish for that place; and
   * (b) after an answer that leaves its fate unknown (a timeout, or a duplicate), never decides anew while that place
   * is empty in the stream: it sends the same fact again, and only once the place holds a fact does it know whether
   * that fact is its own.
   */
  private async append(cell: Cell, fact: { id: string }): Promise<boolean> {
    const b = cell.behaviour;
    const subject = b.factSubject(cell.id);
    const after = cell.seq;
    const data = JSON.stringify(fact);
    for (let attempt = 1; ; attempt++) {
      try {
        const ack = await inSpan(
          `${b.stream} append`,
          SpanKind.PRODUCER,
          { 'messaging.system': 'nats', 'messaging.destination.name': b.stream, 'messaging.operation.type': 'send' },
          () =>
            this.js.publish(subject, data, {
              expect: { lastSubjectSequence: after },
              msgID: `${subject}@${after}`,
            }),
        );
        if (!ack.duplicate) {
          cell.state = b.apply(cell.state, fact, ack.seq);
          cell.seq = ack.seq;
          this.maybeSnapshot(cell);
          return true;
        }
      } catch (err) {
        const failure = natsFailure(err);
        if (failure === 'wrong_last_sequence') {
          await this.load(cell);
          return false;
        }
        if (failure !== 'timeout') throw err;
      }
      // Timed out, or the place is already taken or being taken: read what the stream holds after `after`.
      const ours = await this.load(cell, fact.id);
      if (cell.seq !== after) return ours;
      if (attempt >= appendAttemptsMax) {
        // Its fate still unknown: the next command starts from the stream, whose place is then taken or free.
        throw new AppendUnsettled(`the append after ${subject}@${after} went unanswered ${attempt} times`);
      }
      await delay(appendRetryMs * attempt);
    }
  }

  private decide(cell: Cell, req: BusRequest): Promise<Decision<{ id: string }>> {
    return decideCommand(cell.behaviour, cell.state, req, { actorId: cell.id, seq: cell.seq }, this.o.log);
  }

  /** Fold the actor's facts after `cell.seq`, starting from its snapshot on first load; true if `factId` was one. */
  private async load(cell: Cell, factId?: string): Promise<boolean> {
    const b = cell.behaviour;
    if (!cell.loaded && cell.seq === 0) {
      const snap = await this.o.snapshots.get(`${b.kind}.${cell.id}`);
      const data = snap?.operation === 'PUT' ? snap.json<{ seq: number; v?: number; state: unknown }>() : null;
      // Snapshots written before versions existed are version 1.
      if (data && (data.v ?? 1) === b.snapshotVersion) {
        cell.state = b.fromSnapshot(data.state);
        cell.seq = data.seq;
        cell.snapshotAtMs = snap!.created.getTime();
      }
    }
    const subject = b.factSubject(cell.id);
    let replayed = 0;
    let found = false;
    for (;;) {
      const m = await this.jsm.direct.getMessage(b.stream, { next_by_subj: subject, seq: cell.seq + 1 });
      if (!m) break;
      const fact = m.json<{ id: string }>();
      if (fact.id === factId) found = true;
      cell.state = b.apply(cell.state, fact, m.seq);
      cell.seq = m.seq;
      replayed++;
    }
    cell.loaded = true;
    if (replayed > 0) this.maybeSnapshot(cell, replayed);
    return found;
  }

  private maybeSnapshot(cell: Cell, added = 1): void {
    cell.factsSinceSnapshot += added;
    // Every ASSAY_SNAPSHOT_EVERY facts, or more rarely for a large state: at most about 256 bytes of snapshot per
    // fact appended. A principal's state carries up to ASSAY_IDEMPOTENCY_HOT_KEYS idempotency records, and
    // rewriting all of them every 64 facts would cost more than the facts themselves.
    const every = Math.max(this.o.snapshotEvery, Math.ceil(cell.lastSnapshotBytes / 256));
    if (cell.factsSinceSnapshot < every) return;
    cell.factsSinceSnapshot = 0;
    const b = cell.behaviour;
    const data = JSON.stringify({ seq: cell.seq, v: b.snapshotVersion, state: b.toSnapshot(cell.state) });
    cell.lastSnapshotBytes = data.length;
    cell.snapshotAtMs = this.o.clock.nowMs();
    // A snapshot only shortens activation; losing one costs a longer replay, never correctness.
    this.o.snapshots.put(`${b.kind}.${cell.id}`, data).catch((err) => {
      this.o.log.warn({ err, actor: cell.key }, 'snapshot write failed');
    });
  }
}

/** Decide one command: the behaviour's intercept, then the handler its operation registered. */
export async function decideCommand<K extends ActorKind, S, F extends { id: string }>(
  b: ActorBehaviour<K, S, F>,
  state: S,
  req: BusRequest,
  at: DecideContext,
  log?: Logger,
): Promise<Decision<F>> {
  const early = b.intercept ? await b.intercept(state, req) : null;
  if (early) return { reply: early };
  // The boot check makes a missing handler a message from an incompatible process, not a client error.
  const handler = (b.handlers as unknown as Record<string, AnyHandler | undefined>)[req.op];
  if (!handler) {
    log?.error({ kind: b.kind, op: req.op, requestId: req.requestId }, 'no handler for this operation');
    return { reply: errorReply('unavailable', 'this command is not served by this version; retry shortly') };
  }
  if (requiresCaller(req.op) && !req.caller) {
    return { reply: errorReply('unauthorized', 'this command needs the caller it acts for') };
  }
  return (await handler(state, req, at)) as Decision<F>;
}
