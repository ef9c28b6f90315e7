/** The scale benchmark's report: the text tables and the JSON targets. */
import type { SizeResult } from "./result.ts";
import { Options } from "./options.ts";
import { NICO_USER, round } from "./util.ts";

// ---------------------------------------------------------------- report

export type { SizeResult } from "./result.ts";

export function table(rows: [string, ...string[]][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? "").length)));
  return rows.map((r) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  "))
    .join("\n");
}

export const f = (v: number | null | undefined, unit = "") => (v === null || v === undefined ? "-" : `${v}${unit}`);

export function report(results: SizeResult[], opts: Options): { text: string; targets: Record<string, unknown> } {
  const head: [string, ...string[]] = ["", ...results.map((r) => `${r.size} (${r.machines} machines)`)];
  const col = (g: (r: SizeResult) => string): string[] => results.map(g);
  const rows: [string, ...string[]][] = [
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
    ["NICO worker utilisation", ...col((r) => f(r.provisioning.nicoController.workerUtilisation))],
    [
      "cores nico/apiserver/etcd/bench/others",
      ...col((r) => {
        const c = r.provisioning.cpu;
        return [c.nico, c.apiserver, c.etcd, c.bench, c.others].map((x) => f(x?.cores)).join("/");
      }),
    ],
    [
      "ceiling cores apiserver/etcd/bench/others",
      ...col((r) => {
        const c = r.ceiling?.cpu;
        return c ? [c.apiserver, c.etcd, c.bench, c.others].map((x) => f(x?.cores)).join("/") : "-";
      }),
    ],
    ["idle writes", ...col((r) => `${r.idle.writes} in ${r.idle.seconds} s`)],
    ["idle NICO CPU", ...col((r) => `${r.idle.nicoCpuSeconds} s (${r.idle.nicoCpuPercent}%)`)],
    ["NICO peak RSS", ...col((r) => f(r.memory.peakRssBeforeRolloutMiB, " MiB"))],
  ];
  const largest = results.at(-1)!;
  const smallest = results[0]!;
  const lines = [table(rows)];
  const perCluster = Object.entries(largest.api.provisioning.perCluster).slice(0, 14)
    .map(([k, v]) => `    ${k.padEnd(40)} ${v}`);
  lines.push(
    `\nNICO's requests per cluster provisioned at ${largest.size} (audit log, user ${NICO_USER}):`,
    ...perCluster,
  );
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
  const ratio = largest.ceiling?.ratioReady ?? null;
  const rss1000 = largest.memory.peakRssBeforeRolloutMiB;
  const growth = results.length > 1 && rss1000 !== null && smallest.memory.peakRssBeforeRolloutMiB !== null
    ? round((rss1000 - smallest.memory.peakRssBeforeRolloutMiB) / ((largest.machines - smallest.machines) / 100), 2)
    : null;
  const targets = {
    provisioningWithin1_5xCeiling: { measured: ratio, met: ratio !== null && ratio <= 1.5 },
    zeroIdleWrites: { measured: results.map((r) => r.idle.writes), met: results.every((r) => r.idle.writes === 0) },
    rssUnder150MiBAt1000Machines: {
      measured: rss1000,
      machines: largest.machines,
      met: rss1000 !== null && rss1000 < 150 && largest.machines >= 1000,
      growthMiBPer100Machines: growth,
    },
  };
  lines.push(
    "\nTargets:",
    `    provisioning within 1.5x the ceiling: ${f(ratio, "x")} at ${largest.size} → ${
      targets.provisioningWithin1_5xCeiling.met ? "met" : "MISSED"
    }`,
    `    zero idle writes: ${targets.zeroIdleWrites.measured.join(", ")} → ${
      targets.zeroIdleWrites.met ? "met" : "MISSED"
    }`,
    `    RSS under 150 MB at 1,000 machines: ${f(rss1000, " MiB")} at ${largest.machines} machines` +
      (growth !== null ? ` (+${growth} MiB per 100 machines)` : "") +
      ` → ${
        targets.rssUnder150MiBAt1000Machines.met ? "met" : largest.machines < 1000 ? "not measured at 1,000" : "MISSED"
      }`,
  );
  if (opts.quick) lines.push("    (quick run: smoke figures only)");
  return { text: lines.join("\n"), targets };
}
