/**
 * Which workload clusters hold a live connection (a Node watch and kept-alive sockets) and which are polled: the
 * clusters NICO needed most recently, at most `maxWatches` of them (a least-recently-used set). The rest are asked
 * once per probe round (`/readyz` and the Node list over a connection opened for the round and closed after it), so
 * an idle cluster costs memory for what NICO knows of it, not for sockets and TLS state.
 *
 * A new connection watches if a watch is free. A cluster is needed when a drain or a Node write uses it, when one of
 * its control-plane nodes applied since NICO last asked its version (a rollout), and when its Nodes changed.
 *
 * @module
 */

/** One cluster's connection: its key, when NICO last needed it (milliseconds, any clock; 0: never), whether it watches. */
export interface ConnectionUse {
  key: string;
  neededAt: number;
  watching?: boolean;
}

/**
 * The keys of the clusters that watch: the `maxWatches` most recently needed, in that order. Ties go to those that
 * watch already (no watch moves for nothing), then by key.
 */
export function watchedClusters(uses: readonly ConnectionUse[], maxWatches: number): string[] {
  return [...uses]
    .sort((a, b) =>
      b.neededAt - a.neededAt || Number(b.watching ?? false) - Number(a.watching ?? false) ||
      (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)
    )
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
