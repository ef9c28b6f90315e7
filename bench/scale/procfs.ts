/**
 * Process figures from /proc (Linux): CPU time and resident memory of one
 * process, and finding the program behind a `startGuarded` guard.
 *
 * @module
 */

let ticks: number | undefined;

/** Clock ticks per second (`getconf CLK_TCK`, 100 on Linux almost everywhere). */
export async function clockTicks(): Promise<number> {
  if (ticks !== undefined) return ticks;
  try {
    const out = await new Deno.Command("getconf", { args: ["CLK_TCK"], stdout: "piped", stderr: "null" }).output();
    ticks = Number(new TextDecoder().decode(out.stdout).trim()) || 100;
  } catch {
    ticks = 100;
  }
  return ticks;
}

/** utime + stime of a process (all its threads), in seconds; `undefined` once it has gone. */
export async function cpuSeconds(pid: number): Promise<number | undefined> {
  try {
    const stat = await Deno.readTextFile(`/proc/${pid}/stat`);
    // Field 2 (comm) may contain spaces; everything after the last ')' is space-separated from field 3.
    const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const utime = Number(rest[11]);
    const stime = Number(rest[12]);
    return (utime + stime) / await clockTicks();
  } catch {
    return undefined;
  }
}

/** VmRSS and VmHWM (peak RSS) in MiB. */
export async function memoryMiB(pid: number): Promise<{ rss: number; hwm: number } | undefined> {
  try {
    const status = await Deno.readTextFile(`/proc/${pid}/status`);
    const kb = (key: string) => Number(status.match(new RegExp(`^${key}:\\s+(\\d+) kB`, "m"))?.[1] ?? NaN);
    return { rss: kb("VmRSS") / 1024, hwm: kb("VmHWM") / 1024 };
  } catch {
    return undefined;
  }
}

/** CPU seconds of several processes together (the shards of one run). */
export async function cpuSecondsOf(pids: number[]): Promise<number | undefined> {
  let total = 0;
  for (const pid of pids) {
    const c = await cpuSeconds(pid);
    if (c === undefined) return undefined;
    total += c;
  }
  return total;
}

/** {@link memoryMiB} of each process, in order. */
export async function memoryEach(pids: number[]): Promise<({ rss: number; hwm: number } | undefined)[]> {
  return await Promise.all(pids.map(memoryMiB));
}

async function cmdline(pid: number): Promise<string[]> {
  try {
    return (await Deno.readTextFile(`/proc/${pid}/cmdline`)).split("\0").filter(Boolean);
  } catch {
    return [];
  }
}

async function children(pid: number): Promise<number[]> {
  const out: number[] = [];
  try {
    for await (const t of Deno.readDir(`/proc/${pid}/task`)) {
      const text = await Deno.readTextFile(`/proc/${pid}/task/${t.name}/children`).catch(() => "");
      for (const c of text.trim().split(/\s+/).filter(Boolean)) out.push(Number(c));
    }
  } catch { /* gone */ }
  return out;
}

/**
 * The process behind a guard (`startGuarded` runs `bash -c GUARD`, which
 * starts the program through `setpriv`, which execs it: same pid). Searches
 * the guard's descendants for a command line that contains `needle`.
 */
export async function findProgram(guardPid: number, needle: string, timeoutMs = 10_000): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const queue = await children(guardPid);
    for (let i = 0; i < queue.length && i < 50; i++) {
      const pid = queue[i]!;
      const argv = await cmdline(pid);
      if (
        argv[0] && !argv[0].endsWith("bash") && !argv[0].endsWith("setpriv") && argv.some((a) => a.includes(needle))
      ) {
        return pid;
      }
      queue.push(...await children(pid));
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`no process with '${needle}' under guard ${guardPid}`);
}

/** Pids of processes whose command line contains `needle` (read-only scan of /proc). */
export async function pidsMatching(needle: string, program: string): Promise<number[]> {
  const out: number[] = [];
  for await (const e of Deno.readDir("/proc")) {
    if (!/^\d+$/.test(e.name)) continue;
    const argv = await cmdline(Number(e.name));
    if (argv[0]?.endsWith(program) && argv.some((a) => a.includes(needle))) out.push(Number(e.name));
  }
  return out;
}

/** CPU seconds the whole machine spent busy (all cores; /proc/stat), for telling our load from everyone else's. */
export async function machineBusySeconds(): Promise<number> {
  const line = (await Deno.readTextFile("/proc/stat")).split("\n")[0]!;
  const v = line.trim().split(/\s+/).slice(1).map(Number);
  const total = v.slice(0, 8).reduce((a, b) => a + b, 0);
  const idle = (v[3] ?? 0) + (v[4] ?? 0);
  return (total - idle) / await clockTicks();
}
