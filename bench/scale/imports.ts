/**
 * What NICO's resident memory is made of before it caches anything: the RSS
 * of a fresh `deno run` that imports one module and nothing else. Run as
 * `deno run -A bench/scale/imports.ts [module]`; prints one JSON line.
 *
 * @module
 */

/** Modules measured by {@link importFootprint}, smallest graph first. */
export const IMPORT_PROBES: { label: string; specifier: string | undefined }[] = [
  { label: "deno alone", specifier: undefined },
  { label: "zod", specifier: "zod" },
  { label: "lib/metrics.ts", specifier: "../../lib/metrics.ts" },
  { label: "yaml", specifier: "yaml" },
  { label: "hono", specifier: "hono" },
  { label: "lib/pki.ts (@peculiar/x509)", specifier: "../../lib/pki.ts" },
  { label: "lib/kube/client.ts", specifier: "../../lib/kube/client.ts" },
  { label: "cli/run.ts (all of NICO)", specifier: "../../cli/run.ts" },
];

export interface Footprint {
  label: string;
  rssMiB: number;
  heapUsedMiB: number;
}

/** Runs one probe process per module, one after the other. */
export async function importFootprint(v8Flags?: string): Promise<Footprint[]> {
  const out: Footprint[] = [];
  for (const p of IMPORT_PROBES) {
    const r = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        ...(v8Flags ? [`--v8-flags=${v8Flags}`] : []),
        new URL(import.meta.url).pathname,
        ...(p.specifier ? [p.specifier] : []),
      ],
      stdout: "piped",
      stderr: "null",
      cwd: new URL("../../", import.meta.url).pathname,
    }).output();
    const line = new TextDecoder().decode(r.stdout).trim().split("\n").findLast((l) => l.startsWith("{")) ?? "{}";
    let j: { rssMiB?: number; heapUsedMiB?: number } = {};
    try {
      j = JSON.parse(line);
    } catch { /* reported as NaN */ }
    out.push({ label: p.label, rssMiB: j.rssMiB ?? NaN, heapUsedMiB: j.heapUsedMiB ?? NaN });
  }
  return out;
}

if (import.meta.main) {
  const spec = Deno.args[0];
  if (spec) await import(spec);
  await new Promise((r) => setTimeout(r, 300));
  const status = await Deno.readTextFile("/proc/self/status");
  const rss = Number(status.match(/^VmRSS:\s+(\d+)/m)?.[1] ?? NaN) / 1024;
  const heap = Deno.memoryUsage().heapUsed / 2 ** 20;
  console.log(JSON.stringify({ rssMiB: Math.round(rss * 10) / 10, heapUsedMiB: Math.round(heap * 10) / 10 }));
}
