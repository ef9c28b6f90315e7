/**
 * What the bench reads of its own process: memory (RSS, V8 heap, external) and the sockets among its open file
 * descriptors (`/proc/self/fd` entries that link to `socket:[…]`).
 *
 * @module
 */

export interface Sample {
  rss: number;
  heapUsed: number;
  external: number;
  /** The peak RSS so far (VmHWM). */
  peakRss: number;
  sockets: number;
}

/** Open sockets of this process. */
export async function sockets(): Promise<number> {
  let count = 0;
  for await (const e of Deno.readDir("/proc/self/fd")) {
    try {
      if (Deno.readLinkSync(`/proc/self/fd/${e.name}`).startsWith("socket:")) count++;
    } catch {
      // closed while listed
    }
  }
  return count;
}

/** The process's memory and sockets now. */
export async function sample(): Promise<Sample> {
  const m = Deno.memoryUsage();
  const status = await Deno.readTextFile("/proc/self/status");
  const hwm = Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? 0) * 1024;
  return { rss: m.rss, heapUsed: m.heapUsed, external: m.external, peakRss: hwm, sockets: await sockets() };
}
