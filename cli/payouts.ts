// Operator command for seller payouts: `assay payouts run [<principal id>]`. The run itself happens on a worker
// (the payments service, the only code that talks to the processor); this asks it and prints what it did.
import { askInternal } from '../actors/index.ts';
import { type Config, isUuid, names as namesOf, internalRequest } from '../contracts/index.ts';
import { openNats, StartupError } from './roles.ts';

const payoutsUsage = 'usage: assay payouts run [<principal id>]';

/** A run visits every enabled seller and waits on the processor for each: minutes, not a request's seconds. */
const runTimeoutMs = 10 * 60_000;

export async function payoutsCommand(config: Config, args: string[]): Promise<number> {
  const [action, principalId] = args;
  if (action !== 'run' || (principalId !== undefined && !isUuid(principalId))) throw new StartupError(payoutsUsage);
  const nc = await openNats(config, 'assay-payouts');
  try {
    const answer = await askInternal(
      nc,
      namesOf(config.namespace).serviceSubject('payments'),
      internalRequest('payouts.run', principalId ? { principalId } : {}),
      runTimeoutMs,
    );
    if (!answer.ok) {
      console.error(`the payout run did not complete: ${JSON.stringify(answer.reply)}`);
      return 1;
    }
    console.log(JSON.stringify(answer.body));
    return answer.body.failed.length === 0 ? 0 : 2;
  } finally {
    await nc.drain().catch(() => {});
  }
}
