// How fast this sitting of the machine is, so a run's time can be read against others: the same 2-core machine has
// run the suite in 330 s and in 700 s on different days with the same code (docs/deploy.md, How the suite runs).
// `npm test` prints it, measured before any file starts; the benchmarks print `machineSpeed` beside their results.
import { spawnSync } from 'node:child_process';
import { hash } from 'node:crypto';
import { createServer, connect } from 'node:net';

/**
 * How fast this machine is right now, as a fixed single-core loop (JSON round trip and sha256 of a purchase-sized
 * fact) in operations per millisecond. On a shared VM the same code runs 30% faster or slower from one hour to the
 * next; printing this beside each result lets runs be compared with each other.
 */
export function machineSpeed(ms = 500): number {
  const fact = {
    id: '9d9a82dc-8bc6-457e-89a0-a9f09e9fdb69',
    at: '2026-11-21T14:14:16.132Z',
    principalId: 'b9c9dc4c-4673-4d98-a64d-f6cea26d4276',
    type: 'escrow_held',
    priceCents: 2550,
    formats: ['md'],
    floor: 0.6,
  };
  let ops = 0;
  const started = performance.now();
  while (performance.now() - started < ms) {
    for (let i = 0; i < 100; i++) hash('sha256', JSON.stringify(JSON.parse(JSON.stringify(fact))));
    ops += 100;
  }
  return ops / (performance.now() - started);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

function nodeStartMs(): number {
  const began = performance.now();
  spawnSync(process.execPath, ['-e', '0']);
  return performance.now() - began;
}

/**
 * The wall time of a 100-byte request and its echo over a loopback TCP socket, in microseconds: system calls and
 * wake-ups, where the suite's processes spend much of their time (NATS, PostgreSQL, HTTP). A sitting that ran the
 * suite in 432 s read a slower `machineSpeed` than one that took 702 s, so the loop alone does not tell them apart.
 */
async function loopbackRoundTripUs(roundTrips = 2000): Promise<number> {
  const server = createServer((s) => s.on('data', (d) => s.write(d)));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  const client = connect({ port, host: '127.0.0.1', noDelay: true });
  await new Promise((resolve) => client.once('connect', resolve));
  const request = Buffer.alloc(100, 1);
  let received = 0;
  let echoed: () => void = () => {};
  client.on('data', (d) => {
    received += d.length;
    if (received >= request.length) {
      received -= request.length;
      echoed();
    }
  });
  const began = performance.now();
  for (let i = 0; i < roundTrips; i++) {
    const echo = new Promise<void>((resolve) => {
      echoed = resolve;
    });
    client.write(request);
    await echo;
  }
  const us = ((performance.now() - began) * 1000) / roundTrips;
  client.destroy();
  await new Promise((resolve) => server.close(resolve));
  return us;
}

/**
 * `machineSpeed`, the wall time of starting and ending an empty node process, and of a loopback round trip: each the
 * median of three.
 */
export async function yardstick(): Promise<{ opsPerMs: number; nodeStartMs: number; roundTripUs: number }> {
  const roundTrips = [await loopbackRoundTripUs(), await loopbackRoundTripUs(), await loopbackRoundTripUs()];
  return {
    opsPerMs: Math.round(median([machineSpeed(200), machineSpeed(200), machineSpeed(200)])),
    nodeStartMs: Math.round(median([nodeStartMs(), nodeStartMs(), nodeStartMs()])),
    roundTripUs: Math.round(median(roundTrips)),
  };
}
