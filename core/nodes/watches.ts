/**
 * Which workload clusters hold a live connection (a Node watch and kept-alive sockets) and which are polled: the
 * clusters NICO needed most recently, at most `maxWatches` of them (a least-recently-used set). The rest are asked
 * once per probe round (`/readyz` and the Node list over a connection opened for the round and closed after it), so
 * an idle cluster costs memory for what NICO knows of it, not for sockets and TLS state.
 *
 * A cluster is needed when its connection opens (bring-up), when a drain or a Node write uses it, when one of its
 * control-plane nodes applied (a rollout), and when a round saw its Nodes or its API change.
 *
 * @module
 */

/** One cluster's connection: its key and when NICO last needed it (milliseconds, any monotonic clock). */
export interface ConnectionUse {
  key: string;
  neededAt: number;
}

/** The keys of the clusters that watch: the `maxWatches` most recently needed (ties: by key), in that order. */
export function watchedClusters(uses: readonly ConnectionUse[], maxWatches: number): string[] {
  return [...uses]
    .sort((a, b) => b.neededAt - a.neededAt || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
    .slice(0, Math.max(0, maxWatches))
    .map((u) => u.key);
}

/** What changes when the watched set becomes `next`: the clusters to start watching and those to poll from now on. */
export function watchChanges(
  watching: ReadonlySet<string>,
  next: readonly string[],
): { start: string[]; stop: string[] } {
  const keep = new Set(next);
  return {
    start: next.filter((k) => !watching.has(k)),
    stop: [...watching].filter((k) => !keep.has(k)).sort(),
  };
}
