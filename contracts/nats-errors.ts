// What went wrong in a NATS call, told by the client library's own error classes and JetStream's API error codes
// (never by matching message text), so every layer reacts to the same failure the same way.
import { JetStreamApiCodes, JetStreamApiError } from '@nats-io/jetstream';
import {
  ClosedConnectionError,
  ConnectionError,
  DrainingConnectionError,
  NoRespondersError,
  RequestError,
  TimeoutError,
} from '@nats-io/nats-core';

/** JetStream's error code for a stream name that exists with another configuration ("stream name already in use"). */
const streamNameInUse = 10058;

export type NatsFailure =
  /** Nobody subscribes to the subject (a service or shard not served right now, or no JetStream). */
  | 'no_responders'
  /** No answer in time; the request may or may not have been acted on. */
  | 'timeout'
  /** An append or KV write that expected another last sequence or revision: someone wrote first. */
  | 'wrong_last_sequence'
  /** No such stream or consumer. */
  | 'not_found'
  /** A stream of that name exists already. */
  | 'exists'
  /** The connection is closed, draining or broken. */
  | 'disconnected'
  | 'other';

export function natsFailure(err: unknown): NatsFailure {
  if (err instanceof JetStreamApiError) {
    if (err.code === JetStreamApiCodes.StreamWrongLastSequence) return 'wrong_last_sequence';
    if (err.code === JetStreamApiCodes.StreamNotFound || err.code === JetStreamApiCodes.ConsumerNotFound) {
      return 'not_found';
    }
    if (err.code === streamNameInUse) return 'exists';
    return 'other';
  }
  if (err instanceof TimeoutError) return 'timeout';
  // requestMany throws it bare; request wraps it in a RequestError.
  if (err instanceof NoRespondersError) return 'no_responders';
  if (err instanceof RequestError) {
    if (err.isNoResponders()) return 'no_responders';
    return err.cause instanceof TimeoutError ? 'timeout' : 'other';
  }
  if (err instanceof ClosedConnectionError || err instanceof DrainingConnectionError) return 'disconnected';
  if (err instanceof ConnectionError) return 'disconnected';
  // A JetStream call nobody answers (no server with JetStream, or none reachable) arrives wrapped: look inside once.
  const cause = (err as { cause?: unknown } | null)?.cause;
  if (cause instanceof RequestError && cause.isNoResponders()) return 'no_responders';
  return 'other';
}
