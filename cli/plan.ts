// Operator commands for plans: `assay plan set <principal> free|pro|enterprise` and `assay plan show <principal>`.
// The plan is a fact on the principal's ledger (actors/principal/plans.ts), so the command asks the principal's actor;
// the principal must exist (PostgreSQL's principals table says so, and on which side of the sandbox line it is).
import { askInternal } from '../actors/index.ts';
import {
  type Config,
  isUuid,
  names as namesOf,
  type PlanName,
  planNames,
  plans,
  internalRequest,
} from '../contracts/index.ts';
import { openDatabase, openNats, StartupError } from './roles.ts';

const planUsage = `usage: assay plan set <principal id> ${planNames.join('|')}
       assay plan show <principal id>`;

export async function planCommand(config: Config, args: string[]): Promise<number> {
  const [action, principalId, plan] = args;
  if ((action !== 'set' && action !== 'show') || !principalId || (action === 'set' && !plan)) {
    throw new StartupError(planUsage);
  }
  if (action === 'set' && !(planNames as readonly string[]).includes(plan!)) {
    throw new StartupError(`unknown plan ${plan}; plans are ${planNames.join(', ')}`);
  }
  const sql = await openDatabase(config);
  const nc = await openNats(config, 'assay-plan');
  try {
    // Lower case only, as ids are written: an upper-case id would name another actor's subject.
    const [row] = isUuid(principalId)
      ? await sql<{ sandbox: boolean }[]>`SELECT sandbox FROM principals WHERE id = ${principalId}`
      : [];
    if (!row) {
      console.error(`no principal ${principalId}`);
      return 1;
    }
    const subject = namesOf(config.namespace).actorSubject('principal', principalId);
    const answer =
      action === 'set'
        ? await askInternal(
            nc,
            subject,
            internalRequest('plan.set', { principalId, plan: plan as PlanName, sandbox: row.sandbox }),
            config.requestTimeoutMs,
          )
        : await askInternal(
            nc,
            subject,
            internalRequest('plan.get', { principalId, sandbox: row.sandbox }),
            config.requestTimeoutMs,
          );
    if (!answer.ok) {
      console.error(`the principal's actor refused: ${JSON.stringify(answer.reply)}`);
      return 1;
    }
    const p = answer.body;
    const q = plans[p.plan].quotas;
    console.log(
      `${p.principalId} is on the ${p.plan} plan${p.explicit ? '' : ' (the default)'}: ` +
        `${q.purchasesPerDay ?? 'unlimited'} purchases and ${q.spendCentsPerDay ?? 'unlimited'} cents a day`,
    );
    return 0;
  } finally {
    await nc.drain().catch(() => {});
    await sql.end({ timeout: 1 });
  }
}
