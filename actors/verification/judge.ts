// The built-in judge's public names, where the rest of the code base has always imported them from. The judge
// itself (its versioned rules and the code that applies them) is judges/builtin.ts.
export {
  type ClaimState,
  currentJudgeVersion,
  type Judgement,
  judgeClaim,
  judgeModel,
  judgePromptHash,
  judgeVersions,
} from './judges/builtin.ts';
