/**
 * What the simulated hosts did, read from the simulator's own record (not
 * from NIO's status, which NIO v1 sets before a host ran anything): when each
 * node's switch ran, and how many nodes of a plane were switching at once.
 * An independent witness for rollout tests.
 *
 * @module
 */
import type { SimEvent } from "./sim-nio.ts";

/** One switch of one node (or its removal flake): from its start to its end (undefined while it runs). */
export interface SwitchWindow {
  config: string;
  start: number;
  end?: number;
  ok?: boolean;
  /** NICO's hash of the spec it switched to; absent for a removal. */
  specHash?: string | undefined;
  removal?: boolean;
}

/**
 * Every switch and removal in `history`, in start order. With NIO v1 a node may run two at once (a scheduled
 * tick beside the run a new commit started), so a window is one run's: events are matched by run.
 */
export function switchWindows(history: readonly SimEvent[]): SwitchWindow[] {
  const open = new Map<string, SwitchWindow>();
  const all: SwitchWindow[] = [];
  for (const e of history) {
    const key = `${e.name}\0${e.run ?? ""}`;
    if (e.kind === "apply-started" || e.kind === "remove-started") {
      const removal = e.kind === "remove-started";
      const w: SwitchWindow = { config: e.name, start: e.at, specHash: e.specHash, ...(removal ? { removal } : {}) };
      open.set(key, w);
      all.push(w);
    } else if (
      e.kind === "applied" || e.kind === "apply-failed" || e.kind === "remove-finished" || e.kind === "removed"
    ) {
      // `removed` (the configuration gone) closes whatever the node still had open.
      const keys = e.kind === "removed" ? [...open.keys()].filter((k) => k.startsWith(`${e.name}\0`)) : [key];
      for (const k of keys) {
        const w = open.get(k);
        if (!w) continue;
        w.end = e.at;
        w.ok = e.kind !== "apply-failed";
        open.delete(k);
      }
    }
  }
  return all;
}

/**
 * The switches that changed something: those to a spec other than the one the node ran before (a scheduled
 * NIO v1 run of the unchanged spec changes nothing on the host), and every removal.
 */
export function changingSwitches(windows: readonly SwitchWindow[]): SwitchWindow[] {
  const last = new Map<string, string | undefined>();
  const out: SwitchWindow[] = [];
  for (const w of windows) {
    if (w.removal || !last.has(w.config) || last.get(w.config) !== w.specHash) out.push(w);
    if (!w.removal && w.ok !== false) last.set(w.config, w.specHash);
  }
  return out;
}

/** The most switches of configurations matching `inPlane` running at one moment, from `since` on. */
export function maxConcurrent(
  windows: readonly SwitchWindow[],
  inPlane: (config: string) => boolean,
  since = 0,
): number {
  const points: [number, number][] = [];
  for (const w of windows) {
    if (!inPlane(w.config) || (w.end !== undefined && w.end < since)) continue;
    points.push([Math.max(w.start, since), 1], [w.end ?? Number.MAX_SAFE_INTEGER, -1]);
  }
  // Ends before starts at the same instant: back-to-back switches do not overlap.
  points.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let now = 0;
  let max = 0;
  for (const [, d] of points) max = Math.max(max, now += d);
  return max;
}

/** The configurations in the order their first switch from `since` on started. */
export function switchOrder(windows: readonly SwitchWindow[], since: number): string[] {
  const seen: string[] = [];
  for (const w of windows) if (w.start >= since && !seen.includes(w.config)) seen.push(w.config);
  return seen;
}
