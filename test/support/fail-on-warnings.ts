import { appendFileSync, readFileSync } from 'node:fs';

// Loaded into every test process (test/run.ts): a process warning (a listener leak, a deprecation, an unhandled
// rejection turned warning) fails the test that was running, instead of scrolling past in the output.
process.on('warning', (warning) => {
  setImmediate(() => {
    throw new Error(`process warning: ${warning.name}: ${warning.message}`);
  });
});

// With ASSAY_TEST_CPU_LOG set, each test process appends the CPU it used, and the CPU of the children it waited for
// (role processes, CLI runs, browsers, private servers; from /proc, on Linux), to that file, one JSON line per file:
// where a run's CPU goes, which is what bounds the suite on a small machine.
const cpuLog = process.env.ASSAY_TEST_CPU_LOG;
if (cpuLog) {
  process.on('exit', () => {
    const u = process.resourceUsage();
    const file = process.argv[1] ?? '';
    const cpuMs = Math.round((u.userCPUTime + u.systemCPUTime) / 1000);
    let childrenMs: number | null = null;
    try {
      // Fields 16 and 17 of /proc/self/stat (cutime, cstime), in clock ticks of 1/100 s.
      const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1]!.split(' ');
      childrenMs = (Number(fields[13]) + Number(fields[14])) * 10;
    } catch {}
    appendFileSync(cpuLog, `${JSON.stringify({ file, cpuMs, childrenMs })}\n`);
  });
}
