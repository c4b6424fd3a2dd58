// The approvals sweep, run by every worker: pending approval requests past their time are read from the approvals
// projection and sent to their principals' actors to expire (`approval.expire`). Sweeps in several workers may
// send the same request; the actor expires a request once and only when it is pending and past its time, so a
// duplicate does nothing. The clock is injected: tests move it instead of waiting a day.
import { internalRequest } from '../../contracts/index.ts';
import { setTimeout as sleep } from 'node:timers/promises';
import { expiredApprovals } from '../../storage/index.ts';
import { busRequest } from '../runtime/service.ts';
import type { DueWorkLoopDeps } from '../runtime/worker-deps.ts';

export type ApprovalSweepDeps = DueWorkLoopDeps;

/** Requests expired per pass; a full pass goes on at once. */
const batch = 256;

export async function runApprovalSweep(d: ApprovalSweepDeps, signal: AbortSignal): Promise<void> {
  while (!signal.aborted) {
    let full = false;
    try {
      full = (await expireDue(d)) === batch;
    } catch (err) {
      d.log.error({ err }, 'approval sweep pass failed');
    }
    if (!full) await sleep(d.pollMs, undefined, { signal }).catch(() => {});
  }
}

/** One pass: expire every pending request past its time as of now. Returns how many it sent. */
export async function expireDue(d: ApprovalSweepDeps): Promise<number> {
  const asOf = new Date(d.clock.nowMs());
  const due = await expiredApprovals(d.sql, asOf, batch);
  await Promise.all(
    due.map((a) =>
      busRequest(
        d.nc,
        d.names.actorSubject('principal', a.principal_id),
        internalRequest(
          'approval.expire',
          { approvalId: a.id, asOf: asOf.toISOString() },
          { requestId: `approval-expire-${a.id}` },
        ),
        d.timeoutMs,
        d.log,
      ),
    ),
  );
  return due.length;
}
