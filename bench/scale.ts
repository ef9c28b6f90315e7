/**
 * NICO at scale, on the local control plane with the simulated NIO applying
 * instantly (prints figures; not a timed test). See docs/benchmark.md.
 *
 * For each size (`--sizes`, default 20x5 and 200x5), on a fresh control plane
 * with the API server's audit log recording NICO's user only:
 *   1. provisioning: N clusters of M machines created at once → wall time
 *      until every NixosConfiguration exists and until every cluster is Ready;
 *   2. the ceiling: the same Secrets, NixosConfigurations and status writes
 *      made directly by one client, `--concurrency` in flight, no operator
 *      (then again with NICO's extra requests, and with every extra request
 *      of the run, to split the gap);
 *   3. API cost: NICO's requests by verb and resource (audit log), per cluster;
 *   4. idle: NICO's writes and CPU time over `--idle-seconds` of nothing changing;
 *   5. memory: NICO's peak RSS (VmHWM);
 * and on the largest size, with NICO still running:
 *   6. rollout: a gitRepo change through `--rollout-clusters` clusters, with
 *      the simulated NIO taking `--rollout-apply-ms` per apply, against the
 *      minimum the ordering rules allow.
 *
 * NICO runs as a subprocess (`deno run -A main.ts run`), watching all
 * namespaces, as user `nico` (a client certificate in system:masters). The
 * simulated NIO runs here, one per namespace (`--namespaces`); `gitRepo` is a
 * local repository served over HTTP on loopback, so ref resolution works.
 *
 * Run from the repository root:
 *   deno run -A bench/scale.ts [--quick] [--sizes 20x5,200x5] [--cp 1] [--idle-seconds 60]
 *
 * @module
 */
import { importFootprint } from "./scale/imports.ts";
import { Options, parseOptions } from "./scale/options.ts";
import { log, round, secs, tempDirs } from "./scale/util.ts";
import { runSize } from "./scale/size.ts";
import { type Extras, report, SizeResult, type WebhookFigures } from "./scale/report.ts";
import { measureModes } from "./scale/modes.ts";

// ---------------------------------------------------------------- main

async function main(): Promise<number> {
  let opts: Options;
  try {
    opts = parseOptions(Deno.args);
  } catch (err) {
    console.error((err as Error).message);
    return 2;
  }
  const started = new Date();
  const load0 = (await Deno.readTextFile("/proc/loadavg")).trim();
  log("memory of a bare NICO: one process per import");
  const footprint = await importFootprint();
  const results: SizeResult[] = [];
  for (const [i, size] of opts.sizes.entries()) {
    results.push(await runSize(opts, size, i === opts.sizes.length - 1));
  }
  const extras: Extras = {};
  if (opts.modesClusters > 0) {
    log(`provisioning modes: ${opts.modesClusters} clusters each, apply ${opts.modesApplyMs} ms`);
    extras.modes = await measureModes(opts.modesClusters, opts.modesApplyMs);
  }
  if (opts.webhook) {
    log("webhook: open loop at 1,000/s (bench/webhook.ts --scenario perf)");
    extras.webhook = await webhookFigures();
  }
  const load1 = (await Deno.readTextFile("/proc/loadavg")).trim();
  const { text, targets } = report(results, opts, extras);
  console.log(text);
  console.log(
    "\nRSS of a fresh deno process importing only (MiB): " +
      footprint.map((x) => `${x.label} ${x.rssMiB}`).join(", "),
  );
  const out = {
    benchmark: "scale",
    started: started.toISOString(),
    seconds: secs(Date.now() - started.getTime()),
    machine: {
      cores: navigator.hardwareConcurrency,
      memoryGiB: round(Deno.systemMemoryInfo().total / 2 ** 30, 1),
      loadavgBefore: load0,
      loadavgAfter: load1,
      deno: Deno.version.deno,
    },
    options: { ...opts, out: undefined },
    importFootprint: footprint,
    results,
    modes: extras.modes,
    webhook: extras.webhook,
    targets,
  };
  await Deno.mkdir(opts.out, { recursive: true });
  const path = `${opts.out.replace(/\/+$/, "")}/scale-${started.toISOString().replace(/[:.]/g, "-")}.json`;
  await Deno.writeTextFile(path, JSON.stringify(out, null, 2) + "\n");
  console.log(`\nresults: ${path} (${out.seconds} s in all)`);
  return 0;
}

/** The webhook benchmark in its own processes (server and load), as `deno task bench:webhook` runs it. */
async function webhookFigures(): Promise<WebhookFigures[]> {
  const json = await Deno.makeTempFile({ prefix: "nico-bench-webhook-", suffix: ".json" });
  tempDirs.add(json);
  try {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", new URL("./webhook.ts", import.meta.url).pathname, "--scenario", "perf", "--json", json],
      stdout: "null",
      stderr: "inherit",
    }).output();
    if (!out.success) throw new Error("bench/webhook.ts failed");
    return JSON.parse(await Deno.readTextFile(json)) as WebhookFigures[];
  } finally {
    await Deno.remove(json).catch(() => {});
    tempDirs.delete(json);
  }
}

if (import.meta.main) {
  const interrupted = () => {
    for (const d of tempDirs) {
      try {
        Deno.removeSync(d, { recursive: true });
      } catch { /* already gone */ }
    }
    Deno.exit(130);
  };
  Deno.addSignalListener("SIGINT", interrupted);
  Deno.addSignalListener("SIGTERM", interrupted);
  Deno.exit(await main());
}
