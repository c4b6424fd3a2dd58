// The listing actor: owns one listing's state (price, floor, formats, billing, live or unlisted). Its facts are on
// `<ns>.listing.<id>`; the PostgreSQL listings table is a projection of them. Commands arrive from the seller's
// principal actor, which has already checked the Idempotency-Key; the listing id is derived from that key, so a
// retried create finds the listing it made.
import assert from 'node:assert/strict';
import type { NatsConnection } from '@nats-io/nats-core';
import {
  type BusReply,
  errorReply,
  type ListingFact,
  type ListingState,
  type ListingT,
  type Names,
  okReply,
  type RequestOf,
  internalRequest,
} from '../../contracts/index.ts';
import type { Clock, IdSource } from '../runtime/clock.ts';
import type { ActorBehaviour, Decision } from '../runtime/host.ts';
import { busRequest } from '../runtime/service.ts';

export interface ListingDeps {
  names: Names;
  clock: Clock;
  ids: IdSource;
  nc: NatsConnection;
  baseUrl: string;
  requestTimeoutMs: number;
}

export function listingResource(s: ListingState, baseUrl: string): ListingT {
  return {
    id: s.id,
    artifactId: s.artifactId,
    sellerPrincipalId: s.sellerPrincipalId,
    priceCents: s.priceCents,
    floor: s.floor,
    formats: s.formats,
    billing: s.billing,
    state: s.state,
    sandbox: s.sandbox,
    offerUrl: `${baseUrl}/offers/${s.id}`,
    createdAt: s.createdAt,
    updatedAt: s.updatedAt,
  };
}

/** Fold one fact into a listing's state, asserting what must hold before and after it. */
function apply(s: ListingState, f: ListingFact): ListingState {
  assert.equal(f.listingId, s.id, 'fact on the wrong listing subject');
  switch (f.type) {
    case 'listing_created':
      assert(!s.exists, 'a listing is created once');
      assert(Number.isInteger(f.priceCents) && f.priceCents >= 0, 'price is whole cents');
      Object.assign(s, {
        exists: true,
        artifactId: f.artifactId,
        sellerPrincipalId: f.sellerPrincipalId,
        priceCents: f.priceCents,
        floor: f.floor,
        formats: f.formats,
        billing: f.billing,
        state: 'live',
        sandbox: f.sandbox,
        createdAt: f.at,
        updatedAt: f.at,
      });
      break;
    case 'listing_repriced':
      assert(s.exists && s.state === 'live', 'only a live listing is repriced');
      assert(Number.isInteger(f.priceCents) && f.priceCents >= 0, 'price is whole cents');
      s.priceCents = f.priceCents;
      s.updatedAt = f.at;
      break;
    case 'listing_unlisted':
      assert(s.exists, 'only an existing listing is unlisted');
      s.state = 'unlisted';
      s.updatedAt = f.at;
      break;
    default:
      throw new Error(`unknown listing fact type ${(f as { type?: unknown }).type}`);
  }
  return s;
}

/** The state after `fact`, on a copy (a listing's state is small): what the reply shows, and the pre-append check. */
const after = (s: ListingState, fact: ListingFact) => apply(structuredClone(s), fact);

export function listingBehaviour(d: ListingDeps): ActorBehaviour<'listing', ListingState, ListingFact> {
  const resource = (s: ListingState) => listingResource(s, d.baseUrl);
  const notYours = (): BusReply => errorReply('not_found', 'no listing with this id belongs to the caller');
  const base = (s: ListingState) => ({ id: d.ids.uuid(), at: d.clock.nowIso(), listingId: s.id });
  const decided = (s: ListingState, fact: ListingFact): Decision<ListingFact> => ({
    fact,
    reply: okReply(201, resource(after(s, fact))),
  });

  async function create(s: ListingState, req: RequestOf<'listing.create'>): Promise<Decision<ListingFact>> {
    const { caller, body: c } = req;
    if (s.exists) return { reply: s.sellerPrincipalId === caller.principalId ? okReply(201, resource(s)) : notYours() };
    const owned = await busRequest(
      d.nc,
      d.names.serviceSubject('catalog'),
      { ...internalRequest('catalog.owned_artifact', { artifactId: c.artifact_id }), caller, requestId: req.requestId },
      d.requestTimeoutMs,
    );
    if (!owned.ok) return { reply: owned };
    return decided(s, {
      ...base(s),
      type: 'listing_created',
      artifactId: c.artifact_id,
      sellerPrincipalId: caller.principalId,
      priceCents: c.price_cents,
      floor: c.floor,
      formats: c.formats,
      billing: c.billing ? { intervalSeconds: c.billing.interval_seconds } : null,
      sandbox: caller.sandbox,
    });
  }

  /** The seller's own listing, or null (another's, or none: both are not found to the caller). */
  const owned = (s: ListingState, req: RequestOf<'listing.reprice' | 'listing.unlist'>) =>
    s.exists && s.sellerPrincipalId === req.caller.principalId ? s : null;

  return {
    kind: 'listing',
    stream: d.names.streams.listings.name,
    factSubject: (id) => d.names.listingSubject(id),
    initial: (id) => ({
      id,
      exists: false,
      artifactId: '',
      sellerPrincipalId: '',
      priceCents: 0,
      floor: 0,
      formats: [],
      billing: null,
      state: 'unlisted',
      sandbox: false,
      createdAt: '',
      updatedAt: '',
    }),
    check: (s, fact) => void after(s, fact),
    apply,
    handlers: {
      'listing.state': (s, _req, at) => ({
        reply: okReply(200, s.exists ? { state: s, snapshotId: `${s.id}@${at.seq}` } : null),
      }),
      'listing.create': create,
      'listing.unlist': (s, req) => {
        if (!owned(s, req)) return { reply: notYours() };
        if (s.state === 'unlisted') return { reply: okReply(201, resource(s)) };
        return decided(s, { ...base(s), type: 'listing_unlisted' });
      },
      'listing.reprice': (s, req) => {
        if (!owned(s, req)) return { reply: notYours() };
        if (s.state !== 'live')
          return { reply: errorReply('not_found', 'the listing is unlisted; unlisting is final') };
        return decided(s, { ...base(s), type: 'listing_repriced', priceCents: req.body.price_cents });
      },
    },
    toSnapshot: (s) => s,
    fromSnapshot: (data) => data as ListingState,
    snapshotVersion: 1,
  };
}
