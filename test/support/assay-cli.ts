// How a test starts the `assay` command in a child process, as a user runs it: the build of this checkout that
// test/run.ts made for the run (ASSAY_TEST_CLI, test/support/build.ts), else the sources through tsx (a test file
// run on its own, another checkout such as a mutant's scratch copy or a benchmark's baseline).
import { join } from 'node:path';

const root = new URL('../../', import.meta.url).pathname;

/** Node's arguments that run `assay` from `codeRoot` (this checkout unless given); the command's own follow. */
export function assayArgs(codeRoot = root): string[] {
  const built = process.env.ASSAY_TEST_CLI;
  if (built && codeRoot === root && built.startsWith(root)) return [built];
  return ['--import', 'tsx', join(codeRoot, 'cli/assay.ts')];
}
