/**
 * `nico get`: every cluster with kubectl's printer columns plus where its
 * rollout stands.
 *
 * @module
 */
import type { KubernetesCluster } from "../crds/kubernetescluster.ts";
import { KUBERNETES_CLUSTERS } from "../crds/kubernetescluster.ts";
import { SHARD_LABEL } from "../core/contract/labels.ts";
import { DEFAULT_SHARD } from "../core/contract/shards.ts";
import { commandHelp, type FlagSpec, parseArgs, targetFor } from "./flags.ts";
import { age, type Cell, type Paint, stdoutStyle, type Style, table } from "./term.ts";

const FLAGS: FlagSpec[] = [
  { name: "all-namespaces", short: "A", boolean: true, help: "clusters of every namespace" },
  { name: "color", choices: ["auto", "always", "never"], help: "colour: auto (on a terminal, unless NO_COLOR)" },
];

export const GET_HELP = commandHelp(
  "nico get [cluster...] [flags]",
  "Lists clusters: phase, ready nodes of each plane, Kubernetes version (once reported), rollout state and age.",
  FLAGS,
);

const PHASE_PAINT: Record<string, Paint> = { Ready: "green", Failed: "red", Deleting: "gray" };

/** Where a cluster's rollout stands, in a few words. */
export function rolloutState(c: KubernetesCluster): { text: string; paint?: Paint } {
  const s = c.status;
  const r = s?.rollout;
  if (!r) return { text: "-" };
  const pending = r.pending?.length ?? 0;
  // The halted machine and the pause as the controller wrote them (status.rollout.halted, status.rollout.paused).
  if (r.halted) return { text: `halted at ${r.halted.node}, ${pending} held`, paint: "red" };
  const paused = r.paused === true;
  if (paused && pending) return { text: `paused, ${pending} held`, paint: "yellow" };
  const updating = r.updating ?? [];
  if (updating.length || pending || (r.removing?.length ?? 0)) {
    const parts = [`${r.upToDate}/${r.total}`];
    if (updating.length) parts.push(`updating ${updating.join(",")}`);
    if (pending) parts.push(`${pending} pending`);
    if (r.removing?.length) parts.push(`${r.removing.length} removing`);
    return { text: parts.join(", "), paint: "yellow" };
  }
  return { text: paused ? "up to date (paused)" : "up to date" };
}

/** The shard a cluster belongs to (its label; unlabelled: the default shard) and the one that last wrote its status. */
export function clusterShards(c: KubernetesCluster): { wanted: string; last: string } {
  const wanted = c.metadata.labels?.[SHARD_LABEL] ?? DEFAULT_SHARD;
  return { wanted, last: c.status?.observedGeneration ? c.status.shard ?? DEFAULT_SHARD : wanted };
}

/** The SHARD cell: the cluster's shard and, while it moves, the shard it comes from: `edge-2 (from default)`. */
export function shardCell(c: KubernetesCluster): string {
  const { wanted, last } = clusterShards(c);
  return last === wanted ? wanted : `${wanted} (from ${last})`;
}

/** The table, as text. Pure apart from the style. */
export function renderGet(clusters: KubernetesCluster[], allNamespaces: boolean, style: Style, now: Date): string {
  const sorted = [...clusters].sort((a, b) =>
    `${a.metadata.namespace}/${a.metadata.name}`.localeCompare(`${b.metadata.namespace}/${b.metadata.name}`)
  );
  // A VERSION column (the lowest version the nodes report, as kubectl's) once any cluster reports one.
  const versions = sorted.some((c) => c.status?.version);
  // A SHARD column once any cluster is labelled for a shard or was reconciled by one (core/contract/shards.ts).
  const shards = sorted.some((c) => shardCell(c) !== DEFAULT_SHARD);
  const rows: Cell[][] = sorted.map((c) => {
    const phase = c.status?.phase ?? "";
    const r = rolloutState(c);
    return [
      ...(allNamespaces ? [c.metadata.namespace ?? ""] : []),
      c.metadata.name,
      { text: phase, paint: PHASE_PAINT[phase] ?? "yellow" },
      c.status?.controlPlane?.summary ?? "",
      c.status?.dataPlane?.summary ?? "",
      ...(versions ? [c.status?.version ?? ""] : []),
      ...(shards ? [shardCell(c)] : []),
      { text: r.text, paint: r.paint },
      age(c.metadata.creationTimestamp, now),
    ];
  });
  const header = [
    ...(allNamespaces ? ["NAMESPACE"] : []),
    "NAME",
    "PHASE",
    "CONTROL PLANE",
    "WORKERS",
    ...(versions ? ["VERSION"] : []),
    ...(shards ? ["SHARD"] : []),
    "ROLLOUT",
    "AGE",
  ];
  return table(style, header, rows);
}

/** Entry point of `nico get`; answers the exit code. */
export async function get(args: string[], now = new Date()): Promise<number> {
  const { flags, positional } = parseArgs("get", args, FLAGS);
  if (flags.help) {
    console.log(GET_HELP);
    return 0;
  }
  const { client, namespace } = targetFor(flags);
  const all = flags["all-namespaces"] === true;
  try {
    const list = await client.list<KubernetesCluster>(KUBERNETES_CLUSTERS, all ? {} : { namespace });
    const items = positional.length ? list.items.filter((c) => positional.includes(c.metadata.name)) : list.items;
    const missing = positional.filter((n) => !items.some((c) => c.metadata.name === n));
    for (const n of missing) console.error(`nico get: no KubernetesCluster ${n} in namespace ${namespace}`);
    if (!items.length && !missing.length) {
      console.error(all ? "No clusters found." : `No clusters found in namespace ${namespace} (try -A).`);
      return 0;
    }
    if (items.length) {
      console.log(renderGet(items, all, stdoutStyle(typeof flags.color === "string" ? flags.color : undefined), now));
    }
    return missing.length ? 1 : 0;
  } finally {
    await client.close();
  }
}
