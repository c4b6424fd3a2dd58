// The catalog service (stateless, queue group `svc.catalog`): publishing artifacts and editions (forwarded by the
// principal actor, which owns the Idempotency-Key), and every catalog read: search, reports, trust, errata,
// listings, offers. The sandbox line is enforced here: a caller sees only its own side, the other side is 404.
import { createHash } from 'node:crypto';
import Type from 'typebox';
import {
  type ArtifactQuote,
  type ArtifactT,
  type BusReply,
  canonicalJson,
  type ErratumT,
  errorReply,
  type ListingT,
  type OfferDocumentT,
  okReply,
  pageLimits,
  schemas,
  type PublishEditionCommand,
  type SearchItemT,
  type ServiceHandlers,
} from '../../contracts/index.ts';
import {
  type ArtifactRow,
  currentEdition,
  purchaseEdition,
  type EditionRow,
  enqueueOutbox,
  type ErratumRow,
  errataForArtifact,
  errataForArtifacts,
  getArtifact,
  getListingRow,
  getReport,
  insertArtifact,
  insertEdition,
  type ListingRow,
  purchasedArtifactIds,
  sellerListings,
  type Sql,
  subjectSandbox,
  trustAggregates,
} from '../../storage/index.ts';
import { pgSpan } from '../runtime/telemetry.ts';
import type { WorkerServiceDeps } from '../runtime/worker-deps.ts';
import {
  badCursor,
  decodeNumberCursor,
  decodeTimeIdCursor,
  encodeCursor,
  encodeTimeIdCursor,
} from '../shared/cursor.ts';
import { storedJson } from '../shared/stored-json.ts';
import { parseArtifact } from '../verification/format.ts';
import { judgeQualityOf } from '../verification/judges/quality.ts';
import { meetsFloor } from '../verification/report.ts';

import { searchHandler } from './search.ts';
import { trustScore } from './trust.ts';

/** What a trust subject can be (`GET /v1/trust/{subject}`). */
const trustKinds = ['principal', 'agent', 'artifact'] as const;

/** The parts of a stored report an offer document carries. */
const OfferReportParts = Type.Pick(schemas.VerificationReport, [
  'judgeModel',
  'judgePromptVersion',
  'judgePromptHash',
  'createdAt',
  'summary',
]);

type PublishRequest = PublishEditionCommand['request'];

/** The floor an artifact declares when neither the request nor its front matter does. */
export const defaultArtifactFloor = 0.7;

export function contentHash(content: string): string {
  return `sha256:${createHash('sha256').update(content, 'utf8').digest('hex')}`;
}

export interface CatalogDeps extends WorkerServiceDeps {
  /** The version of the configured judge: new editions are recorded to be judged with it. */
  judgeVersion: string;
}

export function catalogService(d: CatalogDeps) {
  const { sql } = d;
  const offerUrl = (listingId: string) => `${d.config.baseUrl}/offers/${listingId}`;
  const reportUrl = (digest: string) => `${d.config.baseUrl}/v1/reports/${digest}`;

  const handlers: ServiceHandlers<'catalog'> = {
    'catalog.publish_artifact': async ({ body: c, caller }) => {
      const existing = await getArtifact(sql, c.artifactId);
      if (existing) return artifactReply(existing, await currentEdition(sql, existing.id), false);
      const edition = editionFrom(c.editionId, c.artifactId, c.request, undefined, c.judgeVersion);
      await sql.begin(async (tx) => {
        const created = await insertArtifact(
          tx as unknown as Sql,
          { id: c.artifactId, ownerPrincipalId: caller.principalId, sandbox: caller.sandbox },
          edition,
        );
        if (created) await enqueueVerification(tx as unknown as Sql, edition.id);
      });
      d.nc.publish(d.names.notices.artifact(c.artifactId));
      const row = (await getArtifact(sql, c.artifactId))!;
      return artifactReply(row, await currentEdition(sql, row.id), true);
    },

    'catalog.publish_edition': async ({ body: c, caller }) => {
      const artifact = await getArtifact(sql, c.artifactId);
      if (!artifact || artifact.owner_principal_id !== caller.principalId) {
        return errorReply('not_found', 'no artifact with this id belongs to the caller');
      }
      const current = await currentEdition(sql, artifact.id);
      if (current && (current.id === c.editionId || current.content_hash === contentHash(c.request.content))) {
        return artifactReply(artifact, current, current.id === c.editionId);
      }
      const edition = editionFrom(c.editionId, artifact.id, c.request, artifact);
      await sql.begin(async (tx) => {
        await insertEdition(tx as unknown as Sql, edition);
        await enqueueVerification(tx as unknown as Sql, edition.id);
      });
      // Purchase quotes cached in actor hosts name the current edition: tell them it changed.
      d.nc.publish(d.names.notices.artifact(artifact.id));
      const row = (await getArtifact(sql, artifact.id))!;
      return artifactReply(row, await currentEdition(sql, row.id), true);
    },

    'catalog.owned_artifact': async ({ body, caller }) => {
      const artifact = await getArtifact(sql, body.artifactId);
      if (!artifact || artifact.owner_principal_id !== caller.principalId || artifact.sandbox !== caller.sandbox) {
        return errorReply('not_found', 'no artifact with this id belongs to the caller');
      }
      return okReply(200, { artifactId: artifact.id, sandbox: artifact.sandbox });
    },

    searchArtifacts: searchHandler({
      sql,
      clock: d.clock,
      baseUrl: d.config.baseUrl,
      statementMs: d.config.requestTimeoutMs,
      ...(d.log ? { log: d.log } : {}),
    }),

    getArtifact: async ({ params, caller }) => {
      const artifact = await getArtifact(sql, params.artifact_id);
      if (!artifact || artifact.sandbox !== caller.sandbox) return errorReply('not_found', 'no artifact with this id');
      const { editionCreated: _, ...body } = artifactBody(artifact, await currentEdition(sql, artifact.id), false);
      return okReply(200, body);
    },

    getVerificationReport: async ({ params, caller }) => {
      const report = await getReport(sql, params.digest);
      if (!report || report.sandbox !== caller.sandbox) return errorReply('not_found', 'no report with this digest');
      return okReply(200, JSON.parse(report.body));
    },

    getTrust: async ({ params, caller }) => {
      const subject = params.subject;
      // The path's schema holds it to `<kind>:<id>`; the kind is read as one of the three, not cast.
      const kind = trustKinds.find((k) => subject.startsWith(`${k}:`));
      if (kind === undefined) return errorReply('not_found', 'no such subject');
      const id = subject.slice(kind.length + 1);
      const sandbox =
        kind === 'artifact' ? ((await getArtifact(sql, id))?.sandbox ?? null) : await subjectSandbox(sql, kind, id);
      if (sandbox === null || sandbox !== caller.sandbox) return errorReply('not_found', `no ${kind} with this id`);
      const agg = await trustAggregates(sql, [subject]);
      return okReply(200, trustScore(agg.get(subject), d.clock.nowMs()));
    },

    getErrata: async ({ query: q, caller }) => {
      let offset = 0;
      if (q.cursor !== undefined) {
        const o = decodeNumberCursor('errata', q.cursor);
        if (o === null) return badCursor('errata');
        offset = o;
      }
      let rows: (ErratumRow & { artifact_ids?: string[] })[];
      if (q.artifact_id !== undefined) {
        const artifact = await getArtifact(sql, q.artifact_id);
        if (!artifact || artifact.sandbox !== caller.sandbox)
          return errorReply('not_found', 'no artifact with this id');
        rows = (await errataForArtifact(sql, artifact.id)).map((r) => ({ ...r, artifact_ids: [artifact.id] }));
      } else {
        rows = await errataForArtifacts(sql, await purchasedArtifactIds(sql, caller.principalId));
      }
      const limit = q.limit ?? pageLimits.default;
      const page = rows.slice(offset, offset + limit);
      return okReply(200, {
        items: page.map(erratumFields),
        next_cursor: offset + limit < rows.length ? encodeCursor('errata', offset + limit) : null,
      });
    },

    getListings: async ({ query: q, caller }) => {
      let after: { createdAt: Date; id: string } | null = null;
      if (q.cursor !== undefined) {
        after = decodeTimeIdCursor('listings', q.cursor);
        if (after === null) return badCursor('listings');
      }
      const limit = q.limit ?? pageLimits.default;
      const rows = await sellerListings(sql, caller.principalId, after, limit + 1);
      const page = rows.slice(0, limit);
      const last = page.at(-1);
      return okReply(200, {
        items: page.map((r) => listingFields(r, offerUrl(r.id))),
        next_cursor: rows.length > limit && last ? encodeTimeIdCursor('listings', last.created_at, last.id) : null,
      });
    },

    getOffer: async ({ params, caller }) => {
      const listing = await getListingRow(sql, params.id);
      if (listing?.state !== 'live' || listing.sandbox !== caller.sandbox) {
        return errorReply('not_found', 'no live listing with this id');
      }
      const artifact = (await getArtifact(sql, listing.artifact_id))!;
      const offer = await offerDocument(listing, artifact);
      return { ok: true, status: 200, body: offer, etag: strongEtag(offer) };
    },

    // Asked by actor hosts for purchase quotes, without a caller: the buyer's actor applies the sandbox line.
    'catalog.purchase_info': async ({ body }) => {
      const [edition, trust] = await Promise.all([
        pgSpan('SELECT editions', () => purchaseEdition(sql, body.artifactId)),
        pgSpan('SELECT trust_sums', () => trustAggregates(sql, [`artifact:${body.artifactId}`])),
      ]);
      if (!edition) return okReply(200, null);
      const quote: ArtifactQuote = {
        editionId: edition.id,
        judgeVersion: edition.judge_version,
        openErrata: edition.open_errata,
        trustScore: trustScore(trust.get(`artifact:${body.artifactId}`), d.clock.nowMs()).score,
        judgeSpecificity: judgeQualityOf(edition.judge_version)?.specificity ?? null,
        report:
          edition.report_digest === null
            ? null
            : { digest: edition.report_digest, meanEntailment: edition.mean_entailment! },
      };
      return okReply(200, quote);
    },
  };

  async function offerDocument(listing: ListingRow, artifact: ArtifactRow): Promise<OfferDocumentT> {
    const digest = artifact.current_report_digest;
    const report = digest ? await getReport(sql, digest) : null;
    const parsed = report ? storedJson(OfferReportParts, report.body, `report ${digest}`) : null;
    const updated = [listing.updated_at.toISOString(), parsed?.createdAt ?? ''].sort().at(-1)!;
    return {
      offer_version: 'offer-v1',
      listing_id: listing.id,
      artifact_id: artifact.id,
      edition_id: artifact.current_edition_id,
      title: artifact.title,
      seller_principal_id: listing.seller_principal_id,
      price_cents: listing.price_cents,
      currency: 'credit',
      formats: listing.formats,
      floor: listing.floor,
      billing:
        listing.billing_interval_seconds === null ? null : { interval_seconds: listing.billing_interval_seconds },
      sandbox: listing.sandbox,
      verification: parsed ? 'verified' : 'pending',
      judge: parsed
        ? {
            model: parsed.judgeModel,
            version: parsed.judgePromptVersion,
            prompt_hash: parsed.judgePromptHash,
          }
        : null,
      report:
        parsed && digest
          ? {
              digest,
              url: reportUrl(digest),
              mean_entailment: parsed.summary.meanEntailment,
              meets_floor: meetsFloor(parsed, listing.floor),
            }
          : null,
      updated_at: updated,
    };
  }

  function editionFrom(
    editionId: string,
    artifactId: string,
    r: PublishRequest,
    previous?: ArtifactRow,
    judgeVersion = d.judgeVersion,
  ) {
    const fm = parseArtifact(r.content).frontMatter;
    return {
      id: editionId,
      artifactId,
      contentHash: contentHash(r.content),
      content: r.content,
      title: r.title ?? previous?.title ?? fm.title ?? 'Untitled',
      topics: r.topics ?? fm.topics ?? previous?.topics ?? [],
      description: r.description ?? fm.description ?? previous?.description ?? '',
      floor: r.floor ?? fm.floor ?? previous?.floor ?? defaultArtifactFloor,
      judgeVersion,
      createdAt: d.clock.nowIso(),
    };
  }

  async function enqueueVerification(tx: Sql, editionId: string) {
    await enqueueOutbox(tx, d.names.verifySubject, `verify:${editionId}`, { editionId });
  }

  return handlers;
}

function artifactFields(r: ArtifactRow): SearchItemT['artifact'] {
  return {
    id: r.id,
    type: 'context_file',
    contentHash: r.current_content_hash,
    manifest: { title: r.title, topics: r.topics, description: r.description, floor: r.floor },
    ownerPrincipalId: r.owner_principal_id,
    sandbox: r.sandbox,
    createdAt: r.created_at.toISOString(),
  };
}

function artifactReply(r: ArtifactRow, e: EditionRow | null, created: boolean): BusReply {
  return okReply(201, artifactBody(r, e, created));
}

function artifactBody(r: ArtifactRow, e: EditionRow | null, created: boolean): ArtifactT {
  return {
    ...artifactFields(r),
    currentEdition: {
      id: e!.id,
      number: e!.number,
      contentHash: e!.content_hash,
      reportDigest: e!.report_digest,
      createdAt: e!.created_at.toISOString(),
    },
    editionCreated: created,
  };
}

export function listingFields(r: ListingRow, offerUrl: string): ListingT {
  return {
    id: r.id,
    artifactId: r.artifact_id,
    sellerPrincipalId: r.seller_principal_id,
    priceCents: r.price_cents,
    floor: r.floor,
    formats: r.formats,
    billing: r.billing_interval_seconds === null ? null : { intervalSeconds: r.billing_interval_seconds },
    state: r.state,
    sandbox: r.sandbox,
    offerUrl,
    createdAt: r.created_at.toISOString(),
    updatedAt: r.updated_at.toISOString(),
  };
}

function erratumFields(r: ErratumRow & { artifact_ids?: string[] }): ErratumT {
  return {
    id: r.id,
    state: r.state,
    title: r.title,
    description: r.description,
    judgeModel: r.judge_model,
    judgeVersions: r.judge_versions,
    artifactIds: r.artifact_ids ?? [],
    affectedArtifactsTotal: r.affected_total,
    openedAt: r.opened_at.toISOString(),
    closedAt: r.closed_at?.toISOString() ?? null,
  };
}

/** A strong ETag: a hash of the offer's canonical form, so equal documents always carry equal tags. */
export function strongEtag(doc: unknown): string {
  return `"${createHash('sha256').update(canonicalJson(doc)).digest('base64url').slice(0, 32)}"`;
}
