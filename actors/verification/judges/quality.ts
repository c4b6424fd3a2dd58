// What each built-in judge version is measured to be worth: its sensitivity (true claims it verifies) and
// specificity (false claims it does not verify) on the project's published reference set, test/judge/reference.jsonl,
// named by its sha256 (test/judge/reference.md says who wrote it, when, and how it was labelled; no version was tuned
// on it). Reports carry these figures, search items and the trust of an artifact show them, and a mandate may ask for
// a minimum specificity (min_judge_specificity). test/judge/reference.test.ts recomputes every figure from the
// judge's per-case output and the file's labels, so a figure here cannot drift from what the judge does.
// A model judge's quality depends on weights this project does not ship or pin: no figure is published for it (null),
// and a mandate asking for a minimum specificity does not buy what it judged.
import type { JudgeQualityT } from '../../../contracts/index.ts';

/** The reference set every figure below was measured on. */
export const referenceSet = {
  digest: 'sha256:0414c1bd860c8846dc1d9f5195693008c3981e4838d0b50b7f0f9a7c014a78ff',
  cases: 156,
  positives: 72,
  negatives: 84,
} as const;

/** Verified counts per version on the reference set: true claims verified, false claims not verified. */
const measured: Record<string, { truePositives: number; trueNegatives: number }> = {
  '1.0.0': { truePositives: 55, trueNegatives: 20 },
  '1.1.0': { truePositives: 53, trueNegatives: 29 },
  '1.2.0': { truePositives: 32, trueNegatives: 48 },
  '2.0.0': { truePositives: 48, trueNegatives: 74 },
  '3.0.0': { truePositives: 31, trueNegatives: 79 },
};

const round4 = (x: number) => Math.round(x * 10_000) / 10_000;

/** The measured quality of a judge version on the reference set, or null when none is published (model judges). */
export function judgeQualityOf(version: string): JudgeQualityT | null {
  const m = measured[version];
  if (!m) return null;
  const sensitivity = round4(m.truePositives / referenceSet.positives);
  const specificity = round4(m.trueNegatives / referenceSet.negatives);
  return {
    referenceSet: { ...referenceSet },
    sensitivity,
    specificity,
    balancedAccuracy: round4((m.truePositives / referenceSet.positives + m.trueNegatives / referenceSet.negatives) / 2),
  };
}

/** The versions with published figures. */
export const measuredVersions = Object.keys(measured);
