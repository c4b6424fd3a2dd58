// Who holds the actor shard leases, for the tests that run several actor hosts as child processes. Until the hosts
// have split the shards, a shard being handed from one to the other answers 503 `unavailable`; a test that sets up
// its data before that meets refusals that have nothing to do with what it breaks later.
import { Kvm } from '@nats-io/kv';
import { actorKinds } from '../../contracts/index.ts';
import type { RoleProcess } from './processes.ts';
import { eventually, type TestSystem } from './system.ts';

type ShardedKind = 'principal' | 'listing';
/** The kinds whose actors live on shards an actor host leases. */
const shardedKinds: readonly ShardedKind[] = ['principal', 'listing'];

/**
 * The holder of every shard lease of the given kinds (`lease.<kind>.<shard>` -> host id), by direct gets sent
 * together: under load, 128 gets one after another took seconds, and listing the bucket's keys starts a consumer on
 * every poll.
 */
export async function leaseHolders(
  sys: TestSystem,
  kinds: readonly ShardedKind[] = shardedKinds,
): Promise<Map<string, string>> {
  const kv = await new Kvm(sys.nc).open(sys.names.buckets.leases);
  const keys = kinds.flatMap((kind) =>
    Array.from({ length: actorKinds[kind].shardCount }, (_, shard) => `lease.${kind}.${shard}`),
  );
  const entries = await Promise.all(keys.map((key) => kv.get(key)));
  const holders = new Map<string, string>();
  keys.forEach((key, i) => {
    const e = entries[i];
    if (e?.operation === 'PUT') holders.set(key, e.json<{ host: string }>().host);
  });
  return holders;
}

/** How many leases each host holds. */
export function leaseCounts(holders: Map<string, string>): Map<string, number> {
  const counts = new Map<string, number>();
  for (const host of holders.values()) counts.set(host, (counts.get(host) ?? 0) + 1);
  return counts;
}

/** Host ids are `<hostname>-<pid>-<random>`. */
export const pidOf = (hostId: string) => Number(hostId.split('-').at(-2));

/** The number of shards of the given kinds. */
export const shardTotal = (kinds: readonly ShardedKind[] = shardedKinds) =>
  kinds.reduce((n, k) => n + actorKinds[k].shardCount, 0);

/** Wait until every shard of the kinds is held, each of `hosts` holding an equal share and no other host any. */
export async function shardsSplitEvenly(
  sys: TestSystem,
  hosts: RoleProcess[],
  timeoutMs = 30_000,
  kinds: readonly ShardedKind[] = shardedKinds,
): Promise<Map<string, string>> {
  const share = shardTotal(kinds) / hosts.length;
  const pids = hosts.map((h) => h.child.pid!);
  return eventually(
    `the ${hosts.length} actor hosts to split the shards evenly`,
    async () => {
      const holders = await leaseHolders(sys, kinds);
      const byPid = new Map([...leaseCounts(holders)].map(([host, n]) => [pidOf(host), n]));
      if (byPid.size === hosts.length && pids.every((pid) => byPid.get(pid) === share)) return holders;
      // Thrown, it is what a timeout reports: which host held how many.
      throw new Error(`leases held by pid: ${JSON.stringify([...byPid])} (hosts ${pids.join(', ')}; ${share} each)`);
    },
    timeoutMs,
  );
}
