/** The scale benchmark's report: the text tables and the JSON targets. */
import type { SizeResult } from "./result.ts";
import { Options } from "./options.ts";
import { NICO_USER, round } from "./util.ts";
import { type ModeFigures, modeLines } from "./modes.ts";

// ---------------------------------------------------------------- report

export type { SizeResult } from "./result.ts";

export function table(rows: [string, ...string[]][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? "").length)));
  return rows.map((r) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  "))
    .join("\n");
}

export const f = (v: number | null | undefined, unit = "") => (v === null || v === undefined ? "-" : `${v}${unit}`);

/** The report: a table of every size, the largest size's details, the extras, and the targets. */
export function report(
  results: SizeResult[],
  opts: Options,
  extras: Extras = {},
): { text: string; targets: Record<string, unknown> } {
  const largest = results.at(-1)!;
  const lines = [table(sizeRows(results)), ...largestLines(largest)];
  const t = targetRows(results, extras);
  lines.push(`\nNICO ran with V8 flags: ${opts.nicoV8Flags ?? "none (V8's defaults)"}`);
  lines.push(`Simulated NIO: ${opts.nio}, each apply up to ${opts.jitterMs} ms longer by node`);
  lines.push(...extraLines(extras));
  lines.push("\nTargets:", ...t.rows.map((r) => `    ${r.name}: ${r.measured} → ${r.verdict}`));
  if (opts.quick) lines.push("    (quick run: smoke figures only)");
  return { text: lines.join("\n"), targets: t.json };
}

/** The table's rows: a heading, then one row per figure with a column per size. */
function sizeRows(results: SizeResult[]): [string, ...string[]][] {
  const head: [string, ...string[]] = ["", ...results.map((r) => `${r.size} (${r.machines} machines)`)];
  const col = (g: (r: SizeResult) => string): string[] => results.map(g);
  return [
    head,
    ["layout per cluster", ...col((r) => `${r.layout.controlPlane} cp + ${r.layout.workers} workers`)],
    ["all NixosConfigurations exist", ...col((r) => f(r.provisioning.allConfigurationsSeconds, " s"))],
    ["all clusters Ready", ...col((r) => f(r.provisioning.allReadySeconds, " s"))],
    [
      "cluster Ready p50 / p90",
      ...col((r) => `${f(r.provisioning.clusterReadySeconds.p50)} / ${f(r.provisioning.clusterReadySeconds.p90)} s`),
    ],
    ["ceiling (direct writes)", ...col((r) => f(r.ceiling?.seconds, " s"))],
    ["NICO / ceiling (Ready)", ...col((r) => f(r.ceiling?.ratioReady, "x"))],
    ["NICO / ceiling (configurations)", ...col((r) => f(r.ceiling?.ratioConfigurations, "x"))],
    ["ceiling + NICO's extra requests", ...col((r) => f(r.ceiling?.withNicoExtras?.seconds, " s"))],
    ["ceiling + every extra request of the run", ...col((r) => f(r.ceiling?.withAllExtras?.seconds, " s"))],
    [
      "API server requests per cluster (all clients)",
      ...col((r) => `${r.provisioning.apiserver.requestsPerCluster} vs ${f(r.ceiling?.apiserver.requestsPerCluster)}`),
    ],
    [
      "API server CPU-s per cluster",
      ...col((r) =>
        `${f(round(r.provisioning.cpu.apiserver!.seconds / r.provisioning.clusters, 3))} vs ${
          f(r.ceiling ? round(r.ceiling.cpu.apiserver!.seconds / r.provisioning.clusters, 3) : null)
        }`
      ),
    ],
    [
      "watch events sent per cluster",
      ...col((r) =>
        `${r.provisioning.apiserver.watchEventsPerCluster} vs ${f(r.ceiling?.apiserver.watchEventsPerCluster)}`
      ),
    ],
    ["ordering span per cluster p50", ...col((r) => f(r.provisioning.orderingSpanSeconds.p50, " s"))],
    ["NICO requests per cluster", ...col((r) => f(r.api.provisioning.requestsPerCluster))],
    ["NICO writes per cluster", ...col((r) => f(r.api.provisioning.writesPerCluster))],
    [
      "NICO reconciles (mean ms)",
      ...col((r) =>
        `${r.provisioning.nicoController.reconciles} (${f(r.provisioning.nicoController.reconcileMeanMs)})`
      ),
    ],
    [
      "NICO reconcile time per cluster",
      ...col((r) =>
        f(round((r.provisioning.nicoController.reconcileSeconds * 1000) / r.provisioning.clusters, 1), " ms")
      ),
    ],
    ["NICO worker utilisation", ...col((r) => f(r.provisioning.nicoController.workerUtilisation))],
    [
      "cores nico/apiserver/etcd/bench/others",
      ...col((r) => {
        const c = r.provisioning.cpu;
        // Every NICO process together: the default shard's (`nico`) and the others' (`nico-s1`, ...).
        const nico = Object.entries(c).filter(([k]) => k === "nico" || k.startsWith("nico-"))
          .reduce((n, [, v]) => n + (v?.cores ?? NaN), 0);
        return [{ cores: round(nico, 2) }, c.apiserver, c.etcd, c.bench, c.others].map((x) => f(x?.cores)).join("/");
      }),
    ],
    [
      "ceiling cores apiserver/etcd/bench/others",
      ...col((r) => {
        const c = r.ceiling?.cpu;
        return c ? [c.apiserver, c.etcd, c.bench, c.others].map((x) => f(x?.cores)).join("/") : "-";
      }),
    ],
    ["idle writes (reconciles)", ...col((r) => `${r.idle.writes} in ${r.idle.seconds} s (${r.idle.reconciles})`)],
    ["idle NICO CPU", ...col((r) => `${r.idle.nicoCpuSeconds} s (${r.idle.nicoCpuPercent}%)`)],
    ...memoryRows(col),
    ...shardRows(results, col),
  ];
}

/** NICO's peak RSS, and its own account of its memory after the idle window (of the default shard's NICO). */
function memoryRows(col: (g: (r: SizeResult) => string) => string[]): [string, ...string[]][] {
  return [
    ["NICO peak RSS", ...col((r) => f(r.memory.peakRssBeforeRolloutMiB, " MiB"))],
    [
      "after idle: RSS / V8 heap used of total / external",
      ...col((r) => {
        const k = r.memory.afterIdleByKindMiB?.[0];
        return k ? `${f(k.rss)} / ${f(k.heap_used)} of ${f(k.heap_total)} / ${f(k.external)} MiB` : "-";
      }),
    ],
  ];
}

/** With `--shards`: each NICO's peak RSS, and the independent check of who booked and reconciled what. */
function shardRows(results: SizeResult[], col: (g: (r: SizeResult) => string) => string[]): [string, ...string[]][] {
  if (!results.some((r) => r.shards)) return [];
  return [
    ["NICO shards (clusters each)", ...col((r) => r.shards ? JSON.stringify(r.shards.clustersByShard) : "1")],
    ["peak RSS per shard", ...col((r) => (r.memory.peakRssPerShardMiB ?? []).map((v) => f(v)).join(" / ") + " MiB")],
    [
      "double-booked / misplaced / ShardChanged",
      ...col((r) =>
        r.shards
          ? `${r.shards.doubleBooked.length} / ${r.shards.misplaced.length} / ${r.shards.shardChangedEvents}`
          : "-"
      ),
    ],
  ];
}

/** The largest size's requests per cluster and its rollout. */
function largestLines(largest: SizeResult): string[] {
  const perCluster = Object.entries(largest.api.provisioning.perCluster).slice(0, 14)
    .map(([k, v]) => `    ${k.padEnd(40)} ${v}`);
  const lines = [
    `\nNICO's requests per cluster provisioned at ${largest.size} (audit log, user ${NICO_USER}):`,
    ...perCluster,
  ];
  if (largest.rollout) {
    const r = largest.rollout;
    lines.push(
      `\nRollout of a gitRepo change through ${r.clusters} clusters of ${r.machinesPerCluster} (apply ${r.applyMs} ms):`,
      `    measured ${
        f(r.seconds, " s")
      }; minimum ${r.minimumSeconds} s (${r.sequentialSteps} sequential steps x ${r.applyMs} ms); ratio ${
        f(r.ratio, "x")
      }`,
      `    per step: NICO reaction p50 ${f(r.nicoReactionSeconds.p50, " s")}, NIO latency beyond the delay p50 ${
        f(r.nioLatencySeconds.p50, " s")
      }`,
    );
  }
  return lines;
}

/** The provisioning modes and the webhook's open loop, when they ran. */
function extraLines(extras: Extras): string[] {
  const lines: string[] = [];
  if (extras.modes?.length) {
    const m = extras.modes[0]!;
    lines.push(
      `\nProvisioning modes (${m.clusters} clusters of 1 + 4 at once, simulated apply ${m.applyMs} ms):`,
      ...modeLines(extras.modes),
    );
  }
  if (extras.webhook?.length) {
    lines.push(
      `\nWebhook, open loop on loopback TLS (bench/webhook.ts --scenario perf):`,
      ...extras.webhook.map((w) =>
        `    ${w.name.padEnd(48)} ${w.achieved}/s: p50 ${round(w.p50Ms, 2)} ms, p99 ${round(w.p99Ms, 2)} ms; ` +
        `closed loop ${w.closedRps}/s`
      ),
    );
  }
  return lines;
}

/** What the scale run adds beside the sizes: the provisioning modes and the webhook's open loop. */
export interface Extras {
  modes?: ModeFigures[] | undefined;
  webhook?: WebhookFigures[] | undefined;
}

export interface WebhookFigures {
  name: string;
  rate: number;
  achieved: number;
  p50Ms: number;
  p99Ms: number;
  closedRps: number;
}

type Verdict = "met" | "MISSED" | "not measured";
interface TargetRow {
  key: string;
  name: string;
  measured: string;
  verdict: Verdict;
  value: unknown;
}

/** One row per target of the lean-and-fast work (docs/benchmark.md), each with what was measured. */
export function targetRows(
  results: SizeResult[],
  extras: Extras,
): { rows: TargetRow[]; json: Record<string, unknown> } {
  const largest = results.at(-1)!;
  const rows: TargetRow[] = [];
  const add = (key: string, name: string, value: unknown, measured: string, met: boolean | null) =>
    rows.push({ key, name, value, measured, verdict: met === null ? "not measured" : met ? "met" : "MISSED" });
  const writes = results.map((r) => r.api.provisioning.writesPerCluster);
  // The floor: a claim and a configuration per machine, 7 Secrets (one per credential, the etcd CA and the agent
  // token among them, see docs/benchmark.md), 2 status writes and 2 Events; one more status write when a bring-up
  // outlasts the status delay.
  const floor = (r: SizeResult) => 2 * Number(r.size.split("x")[1]) + 11;
  add(
    "writesPerClusterAtFloor",
    "writes per cluster on the happy path <= the floor (21 at 1 + 4; +1 held progress write)",
    writes,
    results.map((r) => `${f(r.api.provisioning.writesPerCluster)} at ${r.size} (floor ${floor(r)})`).join(", "),
    writes.every((w) => w !== null && w !== undefined) ? results.every((r, i) => writes[i]! <= floor(r) + 1) : null,
  );
  const ratio = largest.ceiling?.ratioReady ?? null;
  add(
    "provisioningWithin1_5xCeiling",
    "provisioning within 1.5x the direct-write ceiling",
    ratio,
    `${f(ratio, "x")} at ${largest.size}`,
    ratio === null ? null : ratio <= 1.5,
  );
  const parallel = extras.modes?.find((m) => m.mode === "Parallel");
  const first = extras.modes?.find((m) => m.mode === "BootstrapFirst");
  add(
    "parallelWithin1_3xOneApply",
    "Parallel provisioning: all nodes applied within 1.3x one apply (p50)",
    parallel?.p50Applies ?? null,
    parallel ? `${parallel.p50Applies}x of ${parallel.applyMs} ms (BootstrapFirst ${first?.p50Applies ?? "-"}x)` : "-",
    parallel ? parallel.p50Applies <= 1.3 : null,
  );
  const rssAt = (machines: number) => results.find((r) => r.machines === machines)?.memory.peakRssBeforeRolloutMiB;
  for (const [machines, limit] of [[100, 110], [1000, 150]] as const) {
    const v = rssAt(machines);
    add(
      `peakRssAtMost${limit}MiBAt${machines}Machines`,
      `peak RSS <= ${limit} MiB at ${machines} machines`,
      v ?? null,
      f(v, " MiB"),
      v === undefined || v === null ? null : v <= limit,
    );
  }
  const allowed = extras.webhook?.find((w) => w.name.startsWith("validate: allowed"));
  const ceiling = extras.webhook?.find((w) => w.name.startsWith("trivial"));
  add(
    "webhookP99AtMost3ms",
    "webhook p99 <= 3 ms at 1,000 admissions/s",
    allowed?.p99Ms ?? null,
    allowed
      ? `${round(allowed.p99Ms, 2)} ms at ${allowed.achieved}/s (trivial handler ${round(ceiling?.p99Ms ?? NaN, 2)} ms)`
      : "-",
    allowed ? allowed.p99Ms <= 3 && allowed.rate >= 1000 : null,
  );
  fleetTargets(results, add);
  shardTargets(results, add);
  const idle = results.map((r) => r.idle.writes);
  add("zeroIdleWrites", "zero writes in an idle window", idle, idle.join(", "), idle.every((w) => w === 0));
  return {
    rows,
    json: Object.fromEntries(rows.map((r) => [r.key, { measured: r.value, met: r.verdict === "met" }])),
  };
}

type AddTarget = (key: string, name: string, value: unknown, measured: string, met: boolean | null) => void;

/** The fleet's targets (issue 31): a pass whose cost does not grow with the fleet keeps the ratio to the ceiling flat. */
function fleetTargets(results: SizeResult[], add: AddTarget): void {
  const smallest = results[0]!;
  const largest = results.at(-1)!;
  const cfgRatio = (r: SizeResult) => r.ceiling?.ratioConfigurations ?? null;
  const growth = results.length > 1 && cfgRatio(smallest) && cfgRatio(largest) !== null
    ? round(cfgRatio(largest)! / cfgRatio(smallest)!, 2)
    : null;
  add(
    "configurationsRatioFlatWithin1_2x",
    "time to every configuration / ceiling at the largest size within 1.2x of the smallest's",
    growth,
    `${f(cfgRatio(largest), "x")} at ${largest.size} vs ${f(cfgRatio(smallest), "x")} at ${smallest.size}: ${
      f(growth, "x")
    }`,
    growth === null ? null : growth <= 1.2,
  );
  const fleetRss = results.find((r) => r.machines === 3000)?.memory.peakRssBeforeRolloutMiB;
  add(
    "peakRssAtMost256MiBAt3000Machines",
    "peak RSS <= 256 MiB at 1,000 x 3 machines",
    fleetRss ?? null,
    f(fleetRss, " MiB"),
    fleetRss === undefined || fleetRss === null ? null : fleetRss <= 256,
  );
}

/** With `--shards`: no Machine booked twice, every cluster reconciled by the shard its label names, and only by it. */
function shardTargets(results: SizeResult[], add: AddTarget): void {
  const checked = results.filter((r) => r.shards);
  if (!checked.length) return;
  const doubled = checked.map((r) => r.shards!.doubleBooked.length);
  add(
    "shardsZeroDoubleBooked",
    "0 double-booked Machines with shards over one pool (read back from the API server)",
    doubled,
    checked.map((r) => `${r.shards!.doubleBooked.length} of ${r.shards!.machinesClaimed} claimed at ${r.size}`).join(
      ", ",
    ),
    doubled.every((n) => n === 0),
  );
  const wrong = checked.map((r) => r.shards!.misplaced.length + r.shards!.shardChangedEvents);
  add(
    "shardsEachClusterOneShard",
    "each cluster reconciled by exactly the shard its label names (status.shard, no ShardChanged Event)",
    wrong,
    checked.map((r) => `${r.shards!.misplaced.length} misplaced, ${r.shards!.shardChangedEvents} moved at ${r.size}`)
      .join(", "),
    wrong.every((n) => n === 0),
  );
}
