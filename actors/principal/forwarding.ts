// Seller operations whose state lives elsewhere (artifacts in the catalog service, listings in listing actors). The
// principal actor owns its principal's Idempotency-Keys, so it forwards these with ids derived from (principal,
// operation, key) while its mailbox stays closed, and records a success as a `call_recorded` fact: a retry then
// replays, and the forwarded command is idempotent by its derived id even if the record was lost in a crash.
import {
  type BusReply,
  type BusRequest,
  type CallRecordedFact,
  type Caller,
  type InternalOpId,
  type LedgerFact,
  okReply,
  type RequestOf,
} from '../../contracts/index.ts';
import type { Decision } from '../runtime/host.ts';
import { derivedId } from '../shared/ids.ts';
import { factBase, type PrincipalDeps } from './deps.ts';
import type { PrincipalState } from './state.ts';
import { keyOf, recordOf } from './idempotency.ts';
import type { StoredReply } from './purchase-reply.ts';

type ForwardedOp = 'publishArtifact' | 'publishEdition' | 'createListing' | 'repriceListing' | 'unlistListing';

/** Answer `reply` and record it under the call's key as a `call_recorded` fact, so a retry replays it. */
export function recordedCall(
  d: PrincipalDeps,
  state: PrincipalState,
  req: BusRequest & { caller: Caller },
  reply: StoredReply,
): Decision<LedgerFact> {
  const fact: CallRecordedFact = {
    ...factBase(d, state.principalId, req.caller.sandbox, state.availableCents),
    type: 'call_recorded',
    op: req.op,
    idempotency: recordOf(req, req.caller.agentId, reply),
  };
  return { fact, reply: okReply(reply.status, reply.body) };
}

/** Ask `subject`, then record a success; a refusal changed nothing, so running it again under the key is harmless. */
function forward(
  d: PrincipalDeps,
  state: PrincipalState,
  req: RequestOf<ForwardedOp>,
  subject: string,
  request: BusRequest,
): Decision<LedgerFact> {
  return {
    call: { subject, request },
    next: (reply: BusReply) =>
      reply.ok ? recordedCall(d, state, req, { status: reply.status, body: reply.body }) : { reply },
  };
}

/** The id a forwarded command creates, derived from the principal, what it is and the Idempotency-Key. */
const idFor = (req: RequestOf<ForwardedOp>, what: string) => derivedId(req.caller.principalId, what, keyOf(req).key);

/** Forwarded requests keep the caller and the key of the call, and carry the internal operation and its body. */
const as = <Id extends InternalOpId>(req: BusRequest, op: Id, body: RequestOf<Id>['body']): BusRequest => ({
  ...req,
  op,
  body,
});

export function publishArtifact(d: PrincipalDeps, state: PrincipalState, req: RequestOf<'publishArtifact'>) {
  const command: RequestOf<'catalog.publish_artifact'>['body'] = {
    artifactId: idFor(req, 'artifact'),
    editionId: idFor(req, 'edition'),
    request: req.body,
  };
  return forward(d, state, req, d.names.serviceSubject('catalog'), as(req, 'catalog.publish_artifact', command));
}

export function publishEdition(d: PrincipalDeps, state: PrincipalState, req: RequestOf<'publishEdition'>) {
  const command: RequestOf<'catalog.publish_edition'>['body'] = {
    artifactId: req.params.artifact_id,
    editionId: idFor(req, 'edition'),
    request: req.body,
  };
  return forward(d, state, req, d.names.serviceSubject('catalog'), as(req, 'catalog.publish_edition', command));
}

export function createListing(d: PrincipalDeps, state: PrincipalState, req: RequestOf<'createListing'>) {
  const subject = d.names.actorSubject('listing', idFor(req, 'listing'));
  return forward(d, state, req, subject, as(req, 'listing.create', req.body));
}

export function repriceListing(d: PrincipalDeps, state: PrincipalState, req: RequestOf<'repriceListing'>) {
  const subject = d.names.actorSubject('listing', req.params.listing_id);
  return forward(d, state, req, subject, as(req, 'listing.reprice', req.body));
}

export function unlistListing(d: PrincipalDeps, state: PrincipalState, req: RequestOf<'unlistListing'>) {
  const subject = d.names.actorSubject('listing', req.params.listing_id);
  return forward(d, state, req, subject, as(req, 'listing.unlist', req.body));
}
