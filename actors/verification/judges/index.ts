// The judges: the port every driver implements, the built-in driver, and the choice between drivers that
// configuration makes (ASSAY_JUDGE). There is no fallback from one driver to another.
import type { Config } from '../../../contracts/index.ts';
import { builtinJudge } from './builtin.ts';
import { onnxJudgeFromConfig } from './onnx.ts';
import { openaiJudgeFromConfig } from './openai.ts';
import { type Judge, JudgeUnavailable } from './port.ts';
import type { VerdictCache } from './verdict-cache.ts';

export {
  builtinJudge,
  currentJudgeVersion,
  judgeClaim,
  judgeModel,
  judgePromptHash,
  judgeVersions,
} from './builtin.ts';
export type { ClaimCase, ClaimState, Judge, Judgement, JudgeRun, JudgeUsage } from './port.ts';
export { OnnxJudge, OnnxModelError, onnxJudgeFromConfig, onnxJudgeVersion } from './onnx.ts';
export { OpenAIJudge, openaiJudgeFromConfig } from './openai.ts';
export { PgVerdictCache } from './pg-verdict-cache.ts';
export { JudgeUnavailable, judgeVersionSequence } from './port.ts';
export { MemoryVerdictCache, type VerdictCache } from './verdict-cache.ts';

/** The judge configuration selects (ASSAY_JUDGE). A model judge keeps its verdicts in `cache` (default: memory). */
export function judgeFromConfig(config: Config, o: { cache?: VerdictCache } = {}): Judge {
  if (config.judge === 'builtin') return builtinJudge;
  if (config.judge === 'openai') return openaiJudgeFromConfig(config, o.cache ? { cache: o.cache } : {});
  if (config.judge === 'onnx') return onnxJudgeFromConfig(config, o.cache ? { cache: o.cache } : {});
  throw new Error(`ASSAY_JUDGE=${config.judge}: unknown judge (expected builtin, openai or onnx)`);
}

/**
 * The judges of a worker process: the configured one, which new editions are recorded to be judged with, and the
 * built-in one for editions recorded with one of its versions (published before the deployment switched judges,
 * or the sandbox corpus, which pins old versions). An edition is judged by the judge that has its version; none is
 * judged by another judge instead.
 */
export interface Judges {
  configured: Judge;
  forVersion(version: string): Judge;
  close(): Promise<void>;
}

export function judgesFromConfig(config: Config, o: { cache?: VerdictCache } = {}): Judges {
  const configured = judgeFromConfig(config, o);
  return {
    configured,
    forVersion(version) {
      if (configured.versions.includes(version)) return configured;
      if (builtinJudge.versions.includes(version)) return builtinJudge;
      throw new JudgeUnavailable(
        `no judge of this process judges version ${version} (ASSAY_JUDGE=${config.judge} judges ${configured.versions.join(', ')})`,
      );
    },
    close: async () => {
      await configured.close?.();
    },
  };
}
