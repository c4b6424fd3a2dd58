import { principalBehaviour } from '../../actors/principal/principal.ts';
import { names } from '../../contracts/index.ts';
import { randomIds, systemClock } from '../../actors/index.ts';
import { createHash } from 'node:crypto';
const listing = { state: { id: 'l1', artifactId: 'a1', sellerPrincipalId: '00000000-0000-4000-8000-000000000001', priceCents: 100, floor: 0.5, formats: ['md'], state: 'live', sandbox: true }, snapshotId: 'l1@3' };
const artifact = { editionId: 'e1', judgeVersion: '1.2.0', openErrata: false, trustScore: 0.8, report: { digest: 'd'.repeat(64), meanEntailment: 0.9 } };
const quotes = { listing: async () => listing as any, artifact: async () => artifact };
const b = principalBehaviour({ names: names('x'), clock: systemClock, ids: randomIds, idempotencyRetentionMs: 86400000, quotes });
let s = b.initial('p1');
s = b.apply(s, { id: 'f0', at: new Date().toISOString(), principalId: 'p1', sandbox: true, balanceAfterCents: 1e12, type: 'credited', source: 'sandbox_grant', amountCents: 1e12, topupId: 't', mandate: { id: 'm', perItemCapCents: 50000, minTrust: 0, minJudgeVersion: null, rejectOpenJudgeErrata: false, revoked: false, createdAt: new Date().toISOString() } } as any);
const N = Number(process.argv[2] ?? 50000);
const t0 = performance.now();
for (let i = 0; i < N; i++) {
  const req = { op: 'purchaseArtifact', requestId: 'r', caller: { principalId: 'p1', agentId: 'ag', sandbox: true, scopes: [] }, params: {}, query: {}, body: { listing_id: 'l1', formats: ['md'] }, idempotency: { key: `k${i}`, requestHash: createHash('sha256').update(String(i)).digest('hex') } } as any;
  const d: any = await b.decide(s, req, 'p1', i);
  const json = JSON.stringify(d.fact);
  s = b.apply(s, JSON.parse(json));
  const d2: any = await b.decide(s, d.followUp, 'p1', i);
  s = b.apply(s, JSON.parse(JSON.stringify(d2.fact)));
}
const us = ((performance.now() - t0) * 1000) / N;
console.log(`${us.toFixed(1)} µs per purchase+settle (decide, stringify, parse, apply) ; idempotency ${s.idempotency.size}`);
