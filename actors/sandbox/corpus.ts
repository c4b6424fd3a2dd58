// The sandbox's synthetic corpus: artifacts with real claim and source text, generated deterministically from a
// seed (artifact i depends only on the seed and i, so a larger corpus extends a smaller one), and loaded once per
// deployment through the real paths: artifacts and editions with their verification queued through the outbox,
// listings as listing facts appended exactly as a listing actor appends them.
import { jetstream } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import type { Logger } from 'pino';
import { type ListingFact, type Names, natsFailure } from '../../contracts/index.ts';
import {
  closeErratum,
  enqueueOutboxBulk,
  ensurePrincipal,
  insertArtifactsBulk,
  openErratum,
  type Sql,
} from '../../storage/index.ts';
import { contentHash } from '../catalog/service.ts';
import { derivedId } from '../shared/ids.ts';
import { currentJudgeVersion, judgeModel } from '../verification/judge.ts';
import { corpusTopics, type SourceText } from './corpus-text.ts';

export interface CorpusListing {
  id: string;
  priceCents: number;
  floor: number;
  formats: ('md' | 'pdf')[];
  billing: { intervalSeconds: number } | null;
}

export interface CorpusArtifact {
  index: number;
  id: string;
  editionId: string;
  ownerPrincipalId: string;
  title: string;
  topics: string[];
  description: string;
  floor: number;
  content: string;
  judgeVersion: string;
  quality: 'good' | 'mixed' | 'poor';
  createdAt: string;
  listings: CorpusListing[];
}

const sellerCount = 5;
const baseTimeMs = Date.parse('2026-10-01T00:00:00.000Z');

/** mulberry32: small, fast, and the same on every platform. */
function rng(seed: string, stream: number): () => number {
  let h = 2166136261 ^ stream;
  for (let i = 0; i < seed.length; i++) h = Math.imul(h ^ seed.charCodeAt(i), 16777619);
  let a = h >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function corpusSellers(seed: string): string[] {
  return Array.from({ length: sellerCount }, (_, i) => derivedId('corpus', seed, 'seller', String(i)));
}

/** The lines under `## Sources` that cite these sources: each source, its `####` sections, their quoted lines. */
export function sourcesSectionLines(sources: Iterable<SourceText>): string[] {
  return [...sources].flatMap((s) => [
    `### [${s.id}] ${s.title}`,
    ...Object.entries(s.sections).flatMap(([loc, sentences]) => [`#### ${loc}`, ...sentences.map((x) => `> ${x}`)]),
    '',
  ]);
}

/** Artifact `index` of the corpus of `seed`. */
/** A corpus artifact and its first edition as the catalog stores them (insertArtifactsBulk's row). */
export function corpusArtifactRow(a: CorpusArtifact) {
  return {
    artifact: { id: a.id, ownerPrincipalId: a.ownerPrincipalId, sandbox: true },
    edition: {
      id: a.editionId,
      artifactId: a.id,
      contentHash: contentHash(a.content),
      content: a.content,
      title: a.title,
      topics: a.topics,
      description: a.description,
      floor: a.floor,
      judgeVersion: a.judgeVersion,
      createdAt: a.createdAt,
    },
  };
}

export function corpusArtifact(seed: string, index: number): CorpusArtifact {
  const r = rng(seed, index);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const topic = corpusTopics[index % corpusTopics.length]!;
  const aspect = pick(topic.aspects);
  const roll = r();
  const quality = roll < 0.7 ? 'good' : roll < 0.85 ? 'mixed' : 'poor';
  const modes = { good: [0.9, 0.1, 0], mixed: [0.5, 0.3, 0.2], poor: [0.2, 0.4, 0.4] }[quality];
  const claims: string[] = [];
  const cited = new Map<string, SourceText>();
  const claimCount = 4 + Math.floor(r() * 4);
  for (let c = 1; c <= claimCount; c++) {
    const source = pick(topic.sources);
    const locator = pick(Object.keys(source.sections));
    const sentence = pick(source.sections[locator]!);
    const m = r();
    let text: string;
    if (m < modes[0]!) text = sentence;
    else if (m < modes[0]! + modes[1]!) text = alter(sentence, r);
    else {
      const other = corpusTopics[(index + 1 + Math.floor(r() * (corpusTopics.length - 1))) % corpusTopics.length]!;
      const os = pick(other.sources);
      text = pick(os.sections[pick(Object.keys(os.sections))]!);
    }
    cited.set(source.id, source);
    claims.push(`- [c${c}] ${text} (source: ${source.id}, locator: "${locator}")`);
  }
  const floor = 0.7;
  const title = `${topic.title}: ${aspect} (${index + 1})`;
  const description = `Working notes on ${aspect} in ${topic.title}, with every claim tied to its source.`;
  const content = [
    '---',
    `title: ${title}`,
    `topics: [${topic.topic}, ${aspect.replace(/[^a-z0-9 -]/gi, '')}]`,
    `floor: ${floor}`,
    '---',
    '',
    `# ${title}`,
    '',
    description,
    '',
    '## Claims',
    '',
    ...claims,
    '',
    '## Sources',
    '',
    ...sourcesSectionLines(cited.values()),
  ].join('\n');
  const jv = r();
  const judgeVersion = jv < 0.1 ? '1.0.0' : jv < 0.2 ? '1.1.0' : currentJudgeVersion;
  const id = derivedId('corpus', seed, 'artifact', String(index));
  const listingCount = 1 + Math.floor(r() * 3);
  const listings: CorpusListing[] = Array.from({ length: listingCount }, (_, l) => {
    const formats: ('md' | 'pdf')[] = r() < 0.5 ? ['md'] : r() < 0.5 ? ['md', 'pdf'] : ['pdf'];
    return {
      id: derivedId('corpus', seed, 'listing', String(index), String(l)),
      priceCents: 25 + Math.floor(r() * 200) * 25,
      floor: pick([0.6, 0.7, 0.8]),
      formats,
      billing: r() < 0.15 ? { intervalSeconds: 5 + Math.floor(r() * 56) } : null,
    };
  });
  return {
    index,
    id,
    editionId: derivedId('corpus', seed, 'edition', String(index)),
    ownerPrincipalId: corpusSellers(seed)[index % sellerCount]!,
    title,
    topics: [topic.topic, aspect],
    description,
    floor,
    content,
    judgeVersion,
    quality,
    createdAt: new Date(baseTimeMs + index * 60_000).toISOString(),
    listings,
  };
}

/** Change a sentence so its source no longer supports it: another number, or a negation. */
function alter(sentence: string, r: () => number): string {
  const number = /\b\d+\b/.exec(sentence);
  if (number) return sentence.replace(number[0], String(Number(number[0]) * 2 + 1 + Math.floor(r() * 5)));
  for (const [from, to] of [
    [' is ', ' is not '],
    [' are ', ' are not '],
    [' can ', ' cannot '],
    [' should ', ' should not '],
    [' must ', ' must not '],
  ] as const) {
    if (sentence.includes(from)) return sentence.replace(from, to);
  }
  return `It is not true that ${sentence.charAt(0).toLowerCase()}${sentence.slice(1)}`;
}

export const corpusErrata = (seed: string) => [
  {
    id: derivedId('corpus', seed, 'erratum', '1.0.0'),
    title: 'Judge 1.0.0 checks neither numbers nor negations',
    description:
      'Reports made by assay-lexical-judge 1.0.0 count a claim as verified when its words appear in the source, even if a number differs or the claim negates the source. Re-verify with the current version.',
    judgeVersions: ['1.0.0'],
    closed: false,
  },
  {
    id: derivedId('corpus', seed, 'erratum', '1.1.0'),
    title: 'Judge 1.1.0 misses negations',
    description: 'Reports made by assay-lexical-judge 1.1.0 do not detect a negated claim. Fixed in 1.2.0 and later.',
    judgeVersions: ['1.1.0'],
    closed: true,
  },
];

export interface CorpusDeps {
  nc: NatsConnection;
  sql: Sql;
  names: Names;
  log: Logger;
  nowIso: () => string;
}

/**
 * Load the corpus of `seed` with `count` artifacts unless this namespace has it. Safe to run from several workers
 * at once (an advisory lock) and to re-run after a crash (every write is idempotent by id).
 */
export async function loadSandboxCorpus(
  d: CorpusDeps,
  seed: string,
  count: number,
  signal?: AbortSignal,
): Promise<boolean> {
  if (count <= 0) return false;
  const ns = d.names.namespace;
  const reserved = await d.sql.reserve();
  try {
    await reserved`SELECT pg_advisory_lock(hashtext(${`assay.corpus.${ns}`}))`;
    const done = await reserved`SELECT 1 FROM corpus_loads WHERE namespace = ${ns}`;
    if (done.length > 0) return false;
    const started = Date.now();
    for (const seller of corpusSellers(seed)) await ensurePrincipal(d.sql, seller, true, d.nowIso());
    const js = jetstream(d.nc);
    for (let start = 0; start < count; start += 500) {
      // Stopped midway: the next start resumes, every write below being idempotent by id.
      if (signal?.aborted) return false;

      const batch = Array.from({ length: Math.min(500, count - start) }, (_, i) => corpusArtifact(seed, start + i));
      await d.sql.begin(async (tx) => {
        const created = new Set(await insertArtifactsBulk(tx as unknown as Sql, batch.map(corpusArtifactRow)));
        await enqueueOutboxBulk(
          tx as unknown as Sql,
          batch
            .filter((a) => created.has(a.id))
            .map((a) => ({
              subject: d.names.verifySubject,
              msgId: `verify:${a.editionId}`,
              payload: { editionId: a.editionId },
            })),
        );
      });
      await Promise.all(
        batch.flatMap((a) =>
          a.listings.map(async (l) => {
            const fact: ListingFact = {
              type: 'listing_created',
              id: derivedId('corpus', seed, 'listing-fact', l.id),
              at: a.createdAt,
              listingId: l.id,
              artifactId: a.id,
              sellerPrincipalId: a.ownerPrincipalId,
              priceCents: l.priceCents,
              floor: l.floor,
              formats: l.formats,
              billing: l.billing,
              sandbox: true,
            };
            try {
              // Exactly the listing actor's commit: the first fact of an empty subject.
              await js.publish(d.names.listingSubject(l.id), JSON.stringify(fact), {
                expect: { lastSubjectSequence: 0 },
                msgID: fact.id,
              });
            } catch (err) {
              if (natsFailure(err) !== 'wrong_last_sequence') throw err;
            }
          }),
        ),
      );
    }
    for (const e of corpusErrata(seed)) {
      const at = new Date(baseTimeMs).toISOString();
      await openErratum(d.sql, { ...e, judgeModel, at });
      if (e.closed) await closeErratum(d.sql, e.id, new Date(baseTimeMs + 86_400_000).toISOString());
    }
    d.nc.publish(d.names.notices.errata);
    await reserved`INSERT INTO corpus_loads (namespace, seed, artifacts, loaded_at)
                   VALUES (${ns}, ${seed}, ${count}, ${d.nowIso()})`;
    d.log.info({ seed, artifacts: count, ms: Date.now() - started }, 'sandbox corpus loaded');
    return true;
  } finally {
    await reserved`SELECT pg_advisory_unlock(hashtext(${`assay.corpus.${ns}`}))`.catch(() => {});
    reserved.release();
  }
}
