// `npm run bench:catalog`: verification throughput (editions per second, one worker process) while the sandbox
// corpus is scaled to --artifacts (default 100,000), then search throughput and latency over it with wrk, Assay and a
// conventional peer on the same database in the same run (lines `search (assay)` and `search (peer)` and their
// ratio), the first three titles of fixed topic queries, and the query plans search relies on.
// Above 100,000 artifacts (or with --prejudged) the benchmark writes the artifacts with pre-judged reports in bulk
// before the workers start, instead of having the worker verify every edition (see loadPrejudged).
//   npm run bench:catalog -- [--artifacts 100000] [--seconds 20] [--connections 32] [--prejudged]
//                            [--keep] [--reuse <namespace kept by --keep>]
import { createHash } from 'node:crypto';
import { parseArgs } from 'node:util';
import postgres from 'postgres';
import { corpusArtifact, corpusArtifactRow, weightAtEpoch } from '../../actors/index.ts';
import { pgServerUrl, systemEnv } from '../support/env.ts';
import { type RoleProcess, startRoleProcess } from '../support/processes.ts';
import { dropEnv } from '../support/system.ts';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tierLookUp, walkCutOff } from '../../actors/catalog/search.ts';
import { trustDecay } from '../../actors/shared/trust-weight.ts';
import {
  addToTrustSums,
  browseStatement,
  catalogTermStats,
  ensureDatabase,
  insertArtifactsBulk,
  jsonRows,
  migrate,
  rankedStatement,
  refreshSearchRanks,
  type Sql,
  type Statement,
  topicQueries,
  topicWords,
} from '../../storage/index.ts';
import { freePort } from '../support/env.ts';
import { call } from '../support/http.ts';
import { ensureWrk, machineSpeed, peakRssMiB, registerAgents, usageByGroup, usagePerUnit, wrk } from './support.ts';

/** Topic queries whose first three titles the run prints, so a reader sees the ranking. */
const rankingShowcase = ['vacuum bloat', 'postgresql indexing', 'kubernetes probes', 'postgress', 'idempotency keys'];

/** The conventional peer (search-peer.ts) on the same database, accepting the same agents' tokens. */
async function startSearchPeer(env: Record<string, string>, tokens: string[]) {
  const port = await freePort();
  const tokensFile = join(tmpdir(), `assay-search-peer-tokens-${process.pid}`);
  writeFileSync(tokensFile, `${tokens.join('\n')}\n`);
  const child = spawn(process.execPath, ['--import', 'tsx', new URL('./search-peer.ts', import.meta.url).pathname], {
    env: {
      ...process.env,
      PORT: String(port),
      DATABASE_URL: env.DATABASE_URL!,
      BASE_URL: env.ASSAY_BASE_URL!,
      TOKENS_FILE: tokensFile,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise((resolve) => child.on('exit', resolve));
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (d) => String(d).includes('listening') && resolve());
    void exited.then(() => reject(new Error('the search peer exited before listening')));
  });
  return { child, exited, pid: child.pid!, url: `http://127.0.0.1:${port}` };
}

/** The judge model named by reports the benchmark writes itself (never a real judge's name). */
const prejudgedModel = 'bench-catalog-prejudged';

/**
 * Write corpus artifacts `from` to `count - 1` with their first editions and a report each, in bulk, before the
 * workers start (their corpus loader then finds the artifacts there, queues no verification, and publishes the
 * listing facts as always). The reports are pre-judged, not verified: a claim counts as entailed when it quotes a
 * line of its sources word for word (what the corpus generator makes a good claim of), the mean over the claims is
 * the report's mean entailment, and the body says that it is a benchmark's. Each report adds its trust sample to
 * the sums (artifact and seller) as the worker would, without a row in trust_samples. Verifying a million editions
 * takes about an hour on this machine; this takes minutes.
 */
async function loadPrejudged(db: Sql, seed: string, count: number): Promise<void> {
  const at = new Date().toISOString();
  const weight = weightAtEpoch(Date.now());
  const batchSize = 1000;
  for (let start = 0; start < count; start += batchSize) {
    const batch = Array.from({ length: Math.min(batchSize, count - start) }, (_, i) => corpusArtifact(seed, start + i));
    const reports = batch.map((a) => {
      const quoted = new Set(
        a.content
          .split('\n')
          .filter((l) => l.startsWith('> '))
          .map((l) => l.slice(2)),
      );
      const claims = [...a.content.matchAll(/^- \[c\d+\] (.*) \(source: [^,]+, locator: ".*"\)$/gm)].map((m) => m[1]!);
      const mean = claims.filter((c) => quoted.has(c)).length / Math.max(1, claims.length);
      const body = JSON.stringify({
        prejudged: 'bench:catalog wrote this report in bulk; no judge read the edition',
        artifactId: a.id,
        editionId: a.editionId,
        judgeVersion: a.judgeVersion,
        summary: { claims: claims.length, meanEntailment: mean },
        createdAt: at,
      });
      return {
        digest: createHash('sha256').update(body).digest('hex'),
        edition_id: a.editionId,
        artifact_id: a.id,
        judge_version: a.judgeVersion,
        mean,
        body,
        pass: mean >= a.floor,
        owner: a.ownerPrincipalId,
      };
    });
    await db.begin(async (tx) => {
      const t = tx as unknown as Sql;
      await insertArtifactsBulk(t, batch.map(corpusArtifactRow));
      const rows = jsonRows(reports.map(({ pass: _, owner: __, ...r }) => r));
      await t`
        INSERT INTO reports (digest, edition_id, artifact_id, sandbox, judge_model, judge_version, mean_entailment,
                             signing_key_id, body, created_at)
        SELECT r.digest, r.edition_id, r.artifact_id, true, ${prejudgedModel}, r.judge_version, r.mean,
               'bench-catalog-unsigned', r.body, ${at}
        FROM json_to_recordset(${rows}::text::json)
          AS r(digest text, edition_id uuid, artifact_id uuid, judge_version text, mean float8, body text)
        ON CONFLICT DO NOTHING`;
      await t`
        UPDATE editions e SET report_digest = r.digest
        FROM json_to_recordset(${rows}::text::json) AS r(digest text, edition_id uuid)
        WHERE e.id = r.edition_id`;
      await t`
        UPDATE artifacts a SET current_report_digest = r.digest, current_mean_entailment = r.mean,
          current_judge_model = ${prejudgedModel}, current_judge_version = r.judge_version,
          search_rank = search_rank_of(r.mean, a.floor, 0.5)
        FROM json_to_recordset(${rows}::text::json)
          AS r(digest text, edition_id uuid, artifact_id uuid, judge_version text, mean float8)
        WHERE a.id = r.artifact_id AND a.current_edition_id = r.edition_id`;
      await addToTrustSums(
        t,
        reports.flatMap((r) =>
          [`artifact:${r.artifact_id}`, `principal:${r.owner}`].map((subject) => ({
            subject,
            sourceKind: 'verification',
            sourceId: r.edition_id,
            pass: r.pass,
            at,
            weightAtEpoch: weight,
          })),
        ),
      );
    });
  }
}

const { values } = parseArgs({
  options: {
    artifacts: { type: 'string', default: '100000' },
    seconds: { type: 'string', default: '20' },
    connections: { type: 'string', default: '32' },
    keep: { type: 'boolean', default: false },
    prejudged: { type: 'boolean' },
    reuse: { type: 'string' },
  },
});
const artifacts = Number(values.artifacts);
const prejudged = values.prejudged ?? artifacts > 100_000;
ensureWrk();

const env = await systemEnv({
  LOG_LEVEL: 'warn',
  ASSAY_SANDBOX_REGISTRATIONS_PER_MINUTE: '1000000',
  ASSAY_SANDBOX_CORPUS_ARTIFACTS: String(artifacts),
  ...(values.reuse === undefined
    ? {}
    : { ASSAY_NAMESPACE: values.reuse, DATABASE_URL: `${pgServerUrl}/assay_${values.reuse}` }),
});
const keep = values.keep || values.reuse !== undefined;
if (keep) console.log(`namespace ${env.ASSAY_NAMESPACE} (database ${env.DATABASE_URL}) is kept after the run`);
const procs: RoleProcess[] = [];
const sql = postgres(env.DATABASE_URL!, { max: 2, onnotice: () => {} });
try {
  const seed = env.ASSAY_SANDBOX_CORPUS_SEED ?? 'assay-sandbox-1';
  console.log(
    values.reuse !== undefined
      ? `catalog: ${artifacts} sandbox artifacts, reusing namespace ${values.reuse} as a kept run left it (the verification figure below is not a measurement)`
      : prejudged
        ? `catalog: ${artifacts} sandbox artifacts with PRE-JUDGED reports written in bulk by the benchmark (no judge reads them: a claim quoted word for word from its source counts as entailed); the workers' loader adds the listings`
        : `catalog: ${artifacts} sandbox artifacts; one workers process verifies them while they load`,
  );
  procs.push(await startRoleProcess('actors', env, 'actor host serving'));
  if (prejudged && values.reuse === undefined) {
    // The actor host does not touch PostgreSQL: create the database and its tables here, as the workers would.
    await ensureDatabase(env.DATABASE_URL!);
    await migrate(sql as unknown as Sql);
    const bulkStarted = Date.now();
    await loadPrejudged(sql as unknown as Sql, seed, artifacts);
    console.log(
      `pre-judged artifacts, editions and reports written in bulk in ${((Date.now() - bulkStarted) / 1000).toFixed(1)} s`,
    );
  }
  const started = Date.now();
  const workers = await startRoleProcess('workers', env, 'workers serving');
  procs.push(workers);
  const loadedMs = Date.now() - started;
  let listings = 0;
  for (let i = 0; i < artifacts; i++) listings += corpusArtifact(seed, i).listings.length;
  console.log(`corpus written (artifacts, editions, ${listings} listing facts) in ${(loadedMs / 1000).toFixed(1)} s`);
  let last = { at: Date.now(), n: 0 };
  const samples: number[] = [];
  for (;;) {
    const [r] = await sql<{ reports: number; listings: number }[]>`
      SELECT (SELECT count(*)::int FROM reports) AS reports, (SELECT count(*)::int FROM listings) AS listings`;
    const now = Date.now();
    if (r!.reports > last.n && now > last.at) samples.push(((r!.reports - last.n) * 1000) / (now - last.at));
    last = { at: now, n: r!.reports };
    if (r!.reports >= artifacts && r!.listings >= listings) break;
    await new Promise((res) => setTimeout(res, 2000));
  }
  const totalS = (Date.now() - started) / 1000;
  samples.sort((a, b) => a - b);
  console.log(
    `${prejudged ? 'listings projected (reports pre-judged, not verified)' : 'verification'}: ${artifacts} editions in ${totalS.toFixed(1)} s from start = ${(artifacts / totalS).toFixed(0)} editions/s per worker process (median 2 s window ${samples[Math.floor(samples.length / 2)]?.toFixed(0)}/s, best ${samples.at(-1)?.toFixed(0)}/s); workers peak RSS ${peakRssMiB(workers.child.pid!)} MiB`,
  );
  await sql`VACUUM ANALYZE artifacts`;
  await sql`VACUUM ANALYZE listings`;
  // Settle the trust part of every rank now (the catalog refreshes it at most once a minute): the first refresh after
  // verification rewrites every artifact, which is a load of its own, not what a search costs.
  const refreshStarted = Date.now();
  const refreshed = await refreshSearchRanks(sql as unknown as Sql, trustDecay(Date.now()));
  console.log(
    `search rank refresh: ${refreshed} artifacts' trust part set in ${((Date.now() - refreshStarted) / 1000).toFixed(1)} s; the same refresh with nothing changed:`,
  );
  const again = Date.now();
  console.log(
    `  ${await refreshSearchRanks(sql as unknown as Sql, trustDecay(Date.now()))} changed in ${Date.now() - again} ms`,
  );
  await sql`VACUUM ANALYZE artifacts`;
  const gateway = await startRoleProcess('gateway', env, 'gateway listening');
  procs.push(gateway);
  const baseUrl = env.ASSAY_BASE_URL!;
  const tokens = await registerAgents(baseUrl, 200);
  const peer = await startSearchPeer(env, tokens);
  try {
    const script = new URL('./search.lua', import.meta.url).pathname;
    const connections = Number(values.connections);
    const seconds = Number(values.seconds);

    // What the ranking does to a reader: the first three titles of fixed topic queries, from both services.
    for (const topic of rankingShowcase) {
      const path = `/v1/search?topic=${encodeURIComponent(topic)}&limit=3`;
      const [a, b] = await Promise.all([
        call(baseUrl, 'GET', path, { token: tokens[0]! }),
        call(peer.url, 'GET', path, { token: tokens[0]! }),
      ]);
      // A refusal shows as its status and code (a first uncached page can time out on a cold cache), not as no match.
      const titles = (r: any) =>
        r.status === 200
          ? (r.body.items ?? []).map((i: any) => i.artifact.manifest.title)
          : [`(answered ${r.status} ${r.body?.code ?? ''})`];
      const same = JSON.stringify(titles(a)) === JSON.stringify(titles(b));
      console.log(
        `ranking "${topic}": ${titles(a).join(' | ') || '(nothing)'}${same ? '' : `   PEER DIFFERS: ${titles(b).join(' | ')}`}`,
      );
    }

    const measure = async (label: string, url: string, pids: Record<string, number>) => {
      await wrk({ url, script, tokens, seconds: 5, connections });
      const before = usageByGroup({ ...pids, wrk: process.pid });
      const r = await wrk({ url, script, tokens, seconds, connections });
      const cpu = usagePerUnit(before, usageByGroup({ ...pids, wrk: process.pid }), r.requests);
      console.log(
        `search (${label}): ${Math.round(r.perSecond)}/s  p50 ${r.p50Ms.toFixed(1)} ms  p90 ${r.p90Ms.toFixed(1)} ms  p99 ${r.p99Ms.toFixed(1)} ms  max ${r.maxMs.toFixed(0)} ms  non-2xx ${r.non2xx}\n  CPU per search: ${cpu}`,
      );
      return r;
    };
    console.log(
      `search mix (test/bench/search.lua: 8 filter combinations, first pages of 20 to 50 items with offers and trust), ${connections} connections, ${seconds} s each, after 5 s of warm-up; machine speed ${machineSpeed().toFixed(0)} ops/ms`,
    );
    const assay = await measure('assay', `${baseUrl}/v1/search`, {
      gateway: gateway.child.pid!,
      workers: workers.child.pid!,
      actors: procs[0]!.child.pid!,
    });
    const peerResult = await measure('peer', `${peer.url}/v1/search`, { peer: peer.pid });
    const ratio = assay.perSecond / peerResult.perSecond;
    console.log(
      `assay / peer: ${ratio.toFixed(2)}x the searches per second (target 3.00x: ${ratio >= 3 ? 'met' : 'NOT met'}); p99 ${assay.p99Ms.toFixed(1)} ms against ${peerResult.p99Ms.toFixed(1)} ms (target at or under the peer's: ${assay.p99Ms <= peerResult.p99Ms ? 'met' : 'NOT met'})`,
    );

    // The plans behind it, as the catalog service runs them (its statement, the walk cut-off and the tiers it would
    // look up without walking, from PostgreSQL's statistics).
    const stats = await catalogTermStats(sql as unknown as Sql);
    const walkRows = walkCutOff(51, stats.rows);
    // rankedStatement rounds the cut-off up to a power of two.
    const walk = 2 ** Math.ceil(Math.log2(walkRows));
    const rare = corpusArtifact(seed, Math.floor(artifacts / 3)).title;
    const rareWord = /\((\d+)\)/.exec(rare)![1]!;
    const f = { sandbox: true, limit: 51 };
    const plans: [string, Statement][] = [['browse', browseStatement(f, null)]];
    for (const [label, topic, extra] of [
      ['topic "postgresql"', 'postgresql', {}],
      ['topic "vacuum bloat"', 'vacuum bloat', {}],
      [`rare topic "${rareWord}" (one title)`, rareWord, {}],
      ['typo "postgress"', 'postgress', {}],
      ['typo "idempotncy keys"', 'idempotncy keys', {}],
      ['topic "kubernetes", floor 0.7, max_price 2000', 'kubernetes', { floor: 0.7, maxPriceCents: 2000 }],
    ] as const) {
      const words = await topicWords(sql as unknown as Sql, topic);
      const lookUp = tierLookUp(words, stats, walkRows);
      const how = `${lookUp.exact ? 'exact tiers looked up' : 'exact tiers walked'}${lookUp.typos ? ', typo tiers looked up' : ''}`;
      plans.push([
        `${label}; ${how}`,
        rankedStatement({ ...f, ...extra }, topicQueries(words)!, null, walk, 'stored', lookUp)!,
      ]);
    }
    for (const [label, query] of plans) {
      const plan = await sql.unsafe(`EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY ON) ${query.text}`, query.params);
      const lines = plan.map((p: any) => String(p['QUERY PLAN']));
      const shown = lines.filter(
        (l) =>
          /(Scan using|Scan on artifacts|Index Scan on)(?!.*never executed)|Execution Time|Planning Time/.test(l) &&
          !/ CTE Scan/.test(l),
      );
      console.log(`plan (${label}), walk cut-off ${walk} rows:\n  ${shown.join('\n  ')}`);
    }
  } finally {
    peer.child.kill('SIGTERM');
    await peer.exited;
  }
} finally {
  for (const p of procs.reverse()) {
    p.child.kill('SIGTERM');
    await p.exited;
  }
  await sql.end();
  if (!keep) await dropEnv(env).catch(() => {});
}
