// `assay audit [--json] [--wait-seconds <n>]` (docs/operations.md, Audit): replay the LEDGER and LISTINGS streams
// and check every invariant against the PostgreSQL projections while the service runs (actors/audit/). It
// reads only. Exit 0: no violation; 2: violations, each listed; 1: the audit could not run.
import { parseArgs } from 'node:util';
import { type AuditReport, runAudit, systemClock } from '../actors/index.ts';
import { type Config, names as namesOf } from '../contracts/index.ts';
import { openPool } from '../storage/index.ts';
import { openNats, StartupError } from './roles.ts';

const usage = 'usage: assay audit [--json] [--wait-seconds <n>]';

export async function auditCommand(config: Config, args: string[]): Promise<number> {
  let values: { json?: boolean; 'wait-seconds'?: string };
  try {
    ({ values } = parseArgs({
      args,
      options: { json: { type: 'boolean', default: false }, 'wait-seconds': { type: 'string', default: '30' } },
    }));
  } catch (err) {
    throw new StartupError(`${(err as Error).message}\n${usage}`);
  }
  const waitSeconds = Number(values['wait-seconds']);
  if (!Number.isFinite(waitSeconds) || waitSeconds < 0)
    throw new StartupError(`--wait-seconds takes seconds\n${usage}`);
  const nc = await openNats(config, 'assay-audit');
  // Two connections: the snapshot's transaction, and the checkpoint polls before it.
  const sql = openPool(config.databaseUrl, 2);
  try {
    if (process.stderr.isTTY) process.stderr.write('assay audit: replaying the streams...\n');
    const report = await runAudit({
      nc,
      sql,
      names: namesOf(config.namespace),
      clock: systemClock,
      waitForProjectionsMs: waitSeconds * 1000,
    });
    process.stdout.write(values.json ? `${JSON.stringify(report, null, 2)}\n` : formatAudit(report));
    return report.violationCount === 0 ? 0 : 2;
  } finally {
    await sql.end({ timeout: 1 });
    await nc.drain().catch(() => {});
  }
}

export function formatAudit(r: AuditReport): string {
  const verdict = r.violationCount === 0 ? 'no violation' : `${r.violationCount} VIOLATION(S)`;
  const lines = [`Assay audit started ${r.startedAt}: ${verdict}`, '', 'Streams read:'];
  for (const s of r.streams) lines.push(`  ${s.stream} through sequence ${s.throughSeq} (${s.factsRead} facts)`);
  lines.push('', 'Projections (checkpoint, rows checked through):');
  for (const p of r.projections) lines.push(`  ${p.name}: ${p.checkpoint}, ${p.auditedThroughSeq}`);
  lines.push(
    '',
    'Money in cents     principals     credited    available         held        spent     released      accrued         paid',
  );
  for (const [side, t] of Object.entries(r.money)) {
    const cols = [
      t.principals,
      t.creditedCents,
      t.availableCents,
      t.heldCents,
      t.spentCents,
      t.releasedCents,
      t.accruedCents,
      t.paidCents,
    ];
    lines.push(`  ${side.padEnd(16)}${cols.map((c) => String(c).padStart(13)).join('')}`);
  }
  const o = r.orders;
  lines.push(
    '',
    `Orders: ${o.total} (${o.released} released, ${o.refunded} auto_refunded, ${o.held} held)`,
    `Events: ${r.events.expected} made by the facts, ${r.events.rowsChecked} rows checked`,
    `Listings: ${r.listings}`,
    `Rows checked: ${
      Object.entries(r.rowsChecked)
        .map(([table, n]) => `${table} ${n}`)
        .join(', ') || 'none'
    }`,
    `Took ${(r.tookMs / 1000).toFixed(2)} s`,
  );
  if (r.violationCount > 0) {
    lines.push(
      '',
      `Violations (${r.violationCount}${r.violations.length < r.violationCount ? `, first ${r.violations.length} listed` : ''}):`,
    );
    for (const v of r.violations) lines.push(`  ${v.kind} ${v.subject}: ${v.message}`);
  }
  return `${lines.join('\n')}\n`;
}
