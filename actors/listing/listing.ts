// The listing actor: owns one listing's state (price, floor, formats, billing, live or unlisted). Its facts are on
// `<ns>.listing.<id>`; the PostgreSQL listings table is a projection of them. Commands arrive from the seller's
// principal actor, which has already checked the Idempotency-Key; the listing id is derived from that key, so a
// retried create finds the listing it made.
import assert from 'node:assert/strict';
import type { NatsConnection } from '@nats-io/nats-core';
import {
  type BusReply,
  type BusRequest,
  type Caller,
  errorReply,
  type ListingFact,
  type ListingT,
  type Names,
  okReply,
} from '../../contracts/index.ts';
import { catalogOps } from '../catalog/service.ts';
import type { Clock, IdSource } from '../runtime/clock.ts';
import type { ActorBehaviour, Decision } from '../runtime/host.ts';
import { busRequest } from '../runtime/service.ts';

export interface ListingState {
  id: string;
  exists: boolean;
  artifactId: string;
  sellerPrincipalId: string;
  priceCents: number;
  floor: number;
  formats: ('md' | 'pdf')[];
  billing: { intervalSeconds: number } | null;
  state: 'live' | 'unlisted';
  sandbox: boolean;
  createdAt: string;
  updatedAt: string;
}

export const listingOps = {
  create: 'listing.create',
  reprice: 'listing.reprice',
  unlist: 'listing.unlist',
  get: 'listing.get',
  /** Internal: the full state and its version, for purchase quotes (the buyer's actor applies the sandbox line). */
  state: 'listing.state',
} as const;

export interface CreateListingCommand {
  artifact_id: string;
  price_cents: number;
  floor: number;
  formats: ('md' | 'pdf')[];
  billing?: { interval_seconds: number } | null;
}

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

export function listingBehaviour(d: ListingDeps): ActorBehaviour<ListingState, ListingFact> {
  const resource = (s: ListingState) => listingResource(s, d.baseUrl);
  const notYours = () => errorReply('not_found', 'no listing with this id belongs to the caller');
  const base = (s: ListingState) => ({ id: d.ids.uuid(), at: d.clock.nowIso(), listingId: s.id });

  async function create(s: ListingState, req: BusRequest, caller: Caller): Promise<Decision<ListingFact>> {
    if (s.exists) return { reply: s.sellerPrincipalId === caller.principalId ? okReply(201, resource(s)) : notYours() };
    const c = req.body as CreateListingCommand;
    const owned = await busRequest(
      d.nc,
      d.names.serviceSubject('catalog'),
      { ...req, op: catalogOps.ownedArtifact, body: { artifactId: c.artifact_id } },
      d.requestTimeoutMs,
    );
    if (!owned.ok) return { reply: owned };
    const fact: ListingFact = {
      ...base(s),
      type: 'listing_created',
      artifactId: c.artifact_id,
      sellerPrincipalId: caller.principalId,
      priceCents: c.price_cents,
      floor: c.floor,
      formats: c.formats,
      billing: c.billing ? { intervalSeconds: c.billing.interval_seconds } : null,
      sandbox: caller.sandbox,
    };
    const next = apply(structuredClone(s), fact);
    return { fact, reply: okReply(201, resource(next)) };
  }

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
    }
    return s;
  }

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
    apply,
    async decide(s, req, _id, seq) {
      if (req.op === listingOps.state) {
        return { reply: okReply(200, s.exists ? { state: s, snapshotId: `${s.id}@${seq}` } : null) };
      }
      const caller = req.caller;

      if (!caller) return { reply: errorReply('unauthorized', 'listing commands need a caller') };
      if (req.op === listingOps.create) return create(s, req, caller);
      if (req.op === listingOps.get) {
        return { reply: s.exists && s.sandbox === caller.sandbox ? okReply(200, resource(s)) : notFound() };
      }
      if (!s.exists || s.sellerPrincipalId !== caller.principalId) return { reply: notYours() };
      if (req.op === listingOps.unlist) {
        if (s.state === 'unlisted') return { reply: okReply(201, resource(s)) };
        const fact: ListingFact = { ...base(s), type: 'listing_unlisted' };
        return { fact, reply: okReply(201, resource(apply(structuredClone(s), fact))) };
      }
      if (req.op === listingOps.reprice) {
        if (s.state !== 'live')
          return { reply: errorReply('not_found', 'the listing is unlisted; unlisting is final') };
        const fact: ListingFact = {
          ...base(s),
          type: 'listing_repriced',
          priceCents: (req.body as { price_cents: number }).price_cents,
        };
        return { fact, reply: okReply(201, resource(apply(structuredClone(s), fact))) };
      }
      return { reply: errorReply('not_found', `the listing actor has no operation ${req.op}`) };
    },
    toSnapshot: (s) => s,
    fromSnapshot: (data) => data as ListingState,
    snapshotVersion: 1,
  };
}

const notFound = (): BusReply => errorReply('not_found', 'no listing with this id');
