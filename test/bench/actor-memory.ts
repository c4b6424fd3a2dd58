// `npm run bench:actor-memory`: what an idle cached principal actor costs its host, in bytes of heap. 100,000
// principals are cached as a host caches them (a cell made by the host's own `newCell`, keyed and named from the
// command subject as `enqueue` does), each folded from the fact a sandbox registration appends (its grant and test
// mandate, decided by the real handler), and the heap is measured after a full collection. Printed twice: with the
// grant's idempotency record in the hot tier (a principal as registration leaves it) and without any (one whose
// records have aged out), beside the ceiling of 1 KiB. No NATS or PostgreSQL: nothing here talks to them.
//   node --expose-gc --import tsx test/bench/actor-memory.ts [--actors 100000]
import { parseArgs } from 'node:util';
import { type BusRequest, loadConfig, names as namesOf } from '../../contracts/index.ts';
import { principalBehaviour, type PrincipalDeps } from '../../actors/principal/principal.ts';
import { initialState, type PrincipalState } from '../../actors/principal/state.ts';
import { actorIdOf, type Cell, cellKey, decideCommand, newCell } from '../../actors/runtime/host.ts';
import { randomIds, systemClock } from '../../actors/runtime/clock.ts';
import { sandboxMandateDefaults } from '../../actors/sandbox/service.ts';

const { values } = parseArgs({ options: { actors: { type: 'string', default: '100000' } } });
const count = Number(values.actors);
const ceilingBytes = 1024;

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with node --expose-gc (npm run bench:actor-memory does)');

const config = loadConfig({ ...process.env, ASSAY_NAMESPACE: 'bench' });
const names = namesOf('bench');
// Only what deciding a grant and folding it read; nothing here reaches the bus or the index.
const unused = () => {
  throw new Error('not used by a sandbox grant');
};
const deps = {
  names,
  clock: systemClock,
  ids: randomIds,
  idempotencyRetentionMs: 24 * 3600_000,
  hotKeysMax: config.idempotencyHotKeys,
  // Nothing indexed yet: the grant's record stays in memory, as right after a registration.
  index: { indexedThroughSeq: () => 0, lookup: unused },
  loadFact: unused,
  quotes: {},
  defaultPlan: config.defaultPlan,
  sandboxPlan: config.sandboxPlan,
  rateLeaseMs: config.rateLeaseMs,
  approvalTtlMs: 3600_000,
  processorConfigured: false,
} as unknown as PrincipalDeps;
const behaviour = principalBehaviour(deps);

/** One principal's grant, decided by the actor's own handler against its initial state. */
async function grantFact(state: PrincipalState, registrationId: string) {
  // Parsed from JSON, as the host parses every command it receives.
  const req = JSON.parse(
    JSON.stringify({
      op: 'sandbox.grant',
      requestId: registrationId,
      body: {
        registrationId,
        amountCents: 100_000,
        mandate: { id: randomIds.uuid(), ...sandboxMandateDefaults, revoked: false },
      },
    }),
  ) as BusRequest;
  const decision = await decideCommand(behaviour, state, req, { actorId: state.principalId, seq: 0 });
  if (!('fact' in decision)) throw new Error('the grant was not decided as a fact');
  return decision.fact;
}

async function cache(withRecords: boolean): Promise<{ cells: Map<string, Cell>; bytesPerActor: number }> {
  gc!();
  const before = process.memoryUsage().heapUsed;
  const cells = new Map<string, Cell>();
  for (let i = 0; i < count; i++) {
    // The subject as the NATS client hands it over: a flat string decoded from the wire.
    const subject = Buffer.from(names.actorSubject('principal', randomIds.uuid())).toString();
    const id = actorIdOf(subject);
    const cell = newCell(behaviour, i % 64, id, cellKey('principal', id));
    const fact = await grantFact(cell.state as PrincipalState, randomIds.uuid());
    cell.state = behaviour.apply(cell.state as PrincipalState, fact, i + 1);
    // Without: the hot tier holds nothing, as a state that never had a record (the shared empty map).
    if (!withRecords) (cell.state as PrincipalState).idempotency = initialState('').idempotency;
    cell.seq = i + 1;
    cell.loaded = true;
    cells.set(cell.key, cell);
  }
  gc!();
  return { cells, bytesPerActor: (process.memoryUsage().heapUsed - before) / count };
}

const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
console.log(`actor memory: ${fmt(count)} idle principal actors cached as a host caches them (Node ${process.version})`);
for (const withRecords of [false, true]) {
  const { cells, bytesPerActor } = await cache(withRecords);
  const what = withRecords ? "with the grant's idempotency record" : 'without idempotency records';
  const verdict = bytesPerActor <= ceilingBytes ? 'within' : 'over';
  console.log(
    `  ${what}: ${fmt(bytesPerActor)} B per actor (${verdict} the ceiling of ${fmt(ceilingBytes)} B); ${cells.size.toLocaleString('en-US')} cached`,
  );
  cells.clear();
}
console.log(`  peak RSS ${fmt(process.resourceUsage().maxRSS / 1024)} MiB`);
