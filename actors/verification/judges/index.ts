// The judges: the port every driver implements, the built-in driver, and the choice between drivers that
// configuration makes (ASSAY_JUDGE). There is no fallback from one driver to another.
import type { Config } from '../../../contracts/index.ts';
import { builtinJudge } from './builtin.ts';
import type { Judge } from './port.ts';

export {
  builtinJudge,
  currentJudgeVersion,
  judgeClaim,
  judgeModel,
  judgePromptHash,
  judgeVersions,
} from './builtin.ts';
export type { ClaimCase, ClaimState, Judge, Judgement, JudgeRun, JudgeUsage } from './port.ts';
export { JudgeUnavailable, judgeVersionSequence } from './port.ts';

/** The judge configuration selects (ASSAY_JUDGE). */
export function judgeFromConfig(config: Pick<Config, 'judge'>): Judge {
  if (config.judge === 'builtin') return builtinJudge;
  if (config.judge === 'openai') {
    throw new Error('ASSAY_JUDGE=openai: the model judge driver is not built yet; use ASSAY_JUDGE=builtin');
  }
  throw new Error(`ASSAY_JUDGE=${config.judge}: unknown judge (expected builtin or openai)`);
}
