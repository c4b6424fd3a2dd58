// How fast this sitting of the machine is, measured before a run starts, so a run's time can be read against
// others: the same 2-core machine has run the suite in 330 s and in 700 s on different days with the same code
// (docs/deploy.md, How the suite runs). Two figures, each the median of three rounds: the CPU time of a fixed piece
// of JavaScript, and the wall time of starting and ending an empty node process.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** Hashing and string building, the kind of work the suite's processes do between their socket writes. */
function jsRound(): number {
  const began = process.cpuUsage();
  let s = '';
  for (let i = 0; i < 20_000; i++) s = createHash('sha256').update(`${s}${i}`).digest('hex');
  let x = 0;
  for (let i = 0; i < 20_000_000; i++) x = (x * 31 + i) | 0;
  const used = process.cpuUsage(began);
  return x === 0.5 ? 0 : (used.user + used.system) / 1000;
}

function nodeStartRound(): number {
  const began = performance.now();
  spawnSync(process.execPath, ['-e', '0']);
  return performance.now() - began;
}

export function yardstick(): { jsMs: number; nodeStartMs: number } {
  return {
    jsMs: Math.round(median([jsRound(), jsRound(), jsRound()])),
    nodeStartMs: Math.round(median([nodeStartRound(), nodeStartRound(), nodeStartRound()])),
  };
}
