/**
 * `nico describe <cluster>`: a tree of the cluster, its control plane and
 * workers, and each node with its Machine, NixosConfiguration phase, applied
 * revision, place in the rollout and the newest condition that is not fine.
 *
 * @module
 */
import { conditionOf } from "../crds/conditions/mod.ts";
import { markOf, REMEDIATED_ANNOTATION } from "../core/machines/marks.ts";
import { commandHelp, type FlagSpec } from "./flags.ts";
import {
  type AnyCondition,
  type ClusterView,
  configNameOf,
  isAbnormal,
  newestAbnormal,
  nioPhase,
  type NodeView,
  showCluster,
} from "./observe.ts";
import { age, type Cell, type Paint, paint, type Row, stdoutStyle, type Style, table, tableWidth } from "./term.ts";
import { clusterVersionCell, showsVersions, versionCell } from "./versions.ts";
import { clusterShards } from "./get.ts";
import { describeBackup } from "../core/backup/status.ts";
import { DEFAULT_SHARD } from "../core/contract/shards.ts";

const FLAGS: FlagSpec[] = [
  {
    name: "show-conditions",
    choices: ["all", "problems"],
    help: "all: every condition under each object; problems (default): the newest one that is not fine",
  },
  { name: "color", choices: ["auto", "always", "never"], help: "colour: auto (on a terminal, unless NO_COLOR)" },
];

export const DESCRIBE_HELP = commandHelp(
  "nico describe <cluster> [flags]",
  "Shows the cluster as a tree: control plane and workers, each node's Machine, NIO phase, applied revision,\n" +
    "place in the rollout (updating, pending, held, removing) and its newest condition that is not fine.",
  FLAGS,
);

export interface DescribeOptions {
  showConditions: "all" | "problems";
  now: Date;
}

const STATE_PAINT: Record<string, Paint> = {
  Ready: "green",
  Failed: "red",
  Blocked: "red",
  Applying: "yellow",
  Pending: "yellow",
  Removing: "gray",
  Provisioning: "yellow",
  Updating: "yellow",
  Deleting: "gray",
};
const POSITION_PAINT: Record<string, Paint> = {
  failed: "red",
  updating: "yellow",
  pending: "cyan",
  held: "red",
  removing: "gray",
  "up to date": "green",
};

function conditionText(c: AnyCondition): string {
  const head = `${c.type}=${c.status}${c.reason ? ` ${c.reason}` : ""}`;
  return c.message ? `${head}: ${c.message}` : head;
}

/** A row of the tree, and the prefix of the lines that hang below it. */
interface Entry {
  cells: Cell[];
  below: string;
  /** Its VERSION cell, when the status lists versions (the cluster's row and each node's). */
  version?: string;
}

function conditionRows(prefix: string, conds: AnyCondition[], o: DescribeOptions): Entry[] {
  return conds.map((c, i) => {
    const last = i === conds.length - 1;
    const bad = isAbnormal(c);
    const cells: Cell[] = [
      `${prefix}${last ? "└─" : "├─"}${c.type}`,
      { text: c.status, paint: bad ? "yellow" : "green" },
      "",
      "",
      "",
      age(c.lastTransitionTime, o.now),
      `${c.reason ?? ""}${c.message ? `: ${c.message}` : ""}`,
    ];
    return { cells, below: `${prefix}${last ? "  " : "│ "}` };
  });
}

function nodeRow(prefix: string, n: NodeView, cluster: string, o: DescribeOptions): Cell[] {
  const cond = newestAbnormal(n.config?.status?.conditions);
  // NICO's judgement first (NIO v1's own conditions can say Ready before the host ran anything).
  let note = n.state !== "Ready" ? n.detail : cond ? conditionText(cond) : "";
  if (!n.machineObj) note = `Machine ${n.machine} not found${note ? `; ${note}` : ""}`;
  const mark = markOf(n.machineObj);
  if (mark) note = `out of service (${REMEDIATED_ANNOTATION}: ${mark.text || "set"})${note ? `; ${note}` : ""}`;
  if (n.drain) note = `held: ${n.drain.message}${note ? `; ${note}` : ""}`;
  if (n.etcdHold) note = `held for etcd: ${n.etcdHold}${note ? `; ${note}` : ""}`;
  const tags = [
    n.bootstrap ? "bootstrap" : "",
    mark ? "out of service" : "",
    n.config ? "" : `no ${configNameOf(cluster, n.machine)} yet`,
  ].filter(Boolean);
  const position = n.order && n.position !== "up to date" ? `${n.position} #${n.order}` : n.position;
  return [
    `${prefix}Machine/${n.machine}${tags.length ? ` (${tags.join(", ")})` : ""}`,
    { text: n.state, paint: STATE_PAINT[n.state] },
    nioPhase(n.config),
    n.revision,
    { text: position, paint: POSITION_PAINT[n.position] },
    cond ? age(cond.lastTransitionTime, o.now) : "",
    note,
  ];
}

/** The etcd members as status.etcd last said (a subtree under the cluster), when NICO sees etcd. */
function etcdRows(v: ClusterView): Entry[] {
  const e = v.cluster.status?.etcd;
  if (!e) return [];
  const head: Entry = {
    cells: [
      "├─Etcd",
      {
        text: `${e.healthyVoters}/${e.voters}`,
        paint: e.tolerance < 0 ? "red" : e.healthyVoters < e.voters ? "yellow" : "green",
      },
      "",
      "",
      "",
      "",
      `quorum ${e.quorum}, can lose ${Math.max(0, e.tolerance)}: ${e.counted}`,
    ],
    below: "│ ",
  };
  const backups = backupRow(e.backups);
  const members = e.members.map((m, i): Entry => {
    const last = i === e.members.length - 1 && !backups;
    const tags = [m.leader ? "leader" : "", m.learner ? "learner" : "", ...(m.alarms ?? [])].filter(Boolean);
    return {
      cells: [
        `│ ${last ? "└─" : "├─"}Member/${m.name || m.memberID}${tags.length ? ` (${tags.join(", ")})` : ""}`,
        { text: m.healthy ? "Healthy" : "Unhealthy", paint: m.healthy ? "green" : "red" },
        "",
        "",
        "",
        "",
        `id ${m.memberID}, ${m.peerURL ?? "no peer URL"}, ${m.node ? `node ${m.node}` : "on no node of this cluster"}`,
      ],
      below: `│ ${last ? "  " : "│ "}`,
    };
  });
  return [head, ...members, ...(backups ? [backups] : [])];
}

type Backups = NonNullable<NonNullable<ClusterView["cluster"]["status"]>["etcd"]>["backups"];

/** The last etcd backup, or the failure newer than it, as the last line of the Etcd subtree (spec.etcd.backup). */
function backupRow(b: Backups): Entry | undefined {
  if (!b) return undefined;
  const failing = b.lastFailure && (!b.last || b.lastFailure.time > b.last.time) ? b.lastFailure : undefined;
  const state = failing ? "Failing" : b.last ? "BackedUp" : "None";
  const note = failing
    ? `${failing.reason} backup failed at ${failing.time}: ${failing.message}`
    : b.last
    ? `last ${describeBackup(b.last)}`
    : "no backup yet";
  return {
    cells: [
      "│ └─Backups",
      { text: state, paint: failing ? "red" : b.last ? "green" : "yellow" },
      "",
      "",
      "",
      "",
      `${note}${b.taking ? `; taking one now (${b.taking})` : ""}${b.skipped ? `; ${b.skipped}` : ""}`,
    ],
    below: "│   ",
  };
}

const RESTORE_PAINT: Record<string, Paint> = {
  Succeeded: "green",
  Refused: "red",
  Failed: "red",
  Restored: "green",
  Rejoined: "green",
  Waiting: "gray",
};

/** The last restore (status.restore): its step and message, then each control-plane node's part in it. */
function restoreRows(v: ClusterView): Entry[] {
  const r = v.cluster.status?.restore;
  if (!r) return [];
  const source = `${r.backup ?? "backup not found yet"}${r.from ? ` of ${r.from}` : ""}`;
  const undo = r.safetySnapshot ? `; undo: restore ${r.safetySnapshot}` : "";
  const head: Entry = {
    cells: [
      `├─Restore/${r.requestId}`,
      { text: r.step, paint: RESTORE_PAINT[r.step] ?? "yellow" },
      "",
      "",
      "",
      r.finishedAt ?? r.startedAt,
      `${source}: ${r.message}${undo}`,
    ],
    below: "│ ",
  };
  const nodes = (r.nodes ?? []).map((n, i, all): Entry => ({
    cells: [
      `│ ${i === all.length - 1 ? "└─" : "├─"}${n.name}`,
      { text: n.state, paint: RESTORE_PAINT[n.state] ?? (n.state === "Failed" ? "red" : "yellow") },
      "",
      "",
      "",
      "",
      n.message ?? "",
    ],
    below: `│ ${i === all.length - 1 ? "  " : "│ "}`,
  }));
  return [head, ...nodes];
}

/** ` (shard edge-1)` after the cluster's name, `, moving from …` while another shard still wrote its status; none for the default shard. */
function shardTag(c: ClusterView["cluster"]): string {
  const { wanted, last } = clusterShards(c);
  if (wanted === last) return wanted === DEFAULT_SHARD ? "" : ` (shard ${wanted})`;
  return ` (shard ${wanted}, moving from ${last})`;
}

/** The tree, as text. Pure apart from the style it is given. */
export function renderDescribe(v: ClusterView, style: Style, o: DescribeOptions): string {
  const c = v.cluster;
  const s = c.status;
  const rows: Entry[] = [];
  const conds = s?.conditions ?? [];
  // The Ready condition sums the cluster up when it is not True; otherwise the newest one that is not fine.
  const ready = conditionOf(conds, "Ready");
  const notReady = ready?.status !== "True" ? ready : undefined;
  const worst = notReady ?? newestAbnormal(conds);
  const rollout = s?.rollout;
  const phase = s?.phase ?? "Provisioning";
  rows.push({
    below: "│ ",
    version: clusterVersionCell(v),
    cells: [
      `KubernetesCluster/${c.metadata.name}${shardTag(c)}`,
      { text: phase, paint: STATE_PAINT[phase] },
      "",
      s?.revision ? s.revision.slice(0, 7) : "-",
      rollout ? { text: `${rollout.upToDate}/${rollout.total} up to date`, paint: v.halted ? "red" : undefined } : "",
      worst ? age(worst.lastTransitionTime, o.now) : age(c.metadata.creationTimestamp, o.now),
      worst ? conditionText(worst) : "",
    ],
  });
  const all = o.showConditions === "all";
  if (all) rows.push(...conditionRows("│ ", conds, o));
  rows.push(...etcdRows(v));
  rows.push(...restoreRows(v));
  const planes = [
    { plane: "controlPlane", title: "ControlPlane", status: s?.controlPlane },
    { plane: "dataPlane", title: "Workers", status: s?.dataPlane },
  ] as const;
  planes.forEach((p, pi) => {
    const lastPlane = pi === planes.length - 1;
    const nodes = v.nodes.filter((n) => n.plane === p.plane);
    const summary = p.status
      ? `${p.status.ready}/${p.status.total}`
      : `${nodes.filter((n) => n.state === "Ready").length}/${nodes.length}`;
    const allReady = nodes.every((n) => n.state === "Ready");
    rows.push({
      cells: [`${lastPlane ? "└─" : "├─"}${p.title}`, { text: summary, paint: allReady ? "green" : "yellow" }],
      below: lastPlane ? "  " : "│ ",
    });
    const indent = lastPlane ? "  " : "│ ";
    nodes.forEach((n, ni) => {
      const lastNode = ni === nodes.length - 1;
      rows.push({
        cells: nodeRow(`${indent}${lastNode ? "└─" : "├─"}`, n, c.metadata.name, o),
        below: `${indent}${lastNode ? "  " : "│ "}`,
        version: versionCell(v, n),
      });
      if (all) rows.push(...conditionRows(`${indent}${lastNode ? "  " : "│ "}`, n.config?.status?.conditions ?? [], o));
    });
  });
  // With versions in the status, a VERSION column after ROLLOUT (the cluster's lowest, each node's own).
  const versions = showsVersions(v);
  for (const r of versions ? rows : []) if (r.cells.length > 5) r.cells.splice(5, 0, r.version ?? "");
  const cols = versions ? 6 : 5;
  const header = [
    "NAME",
    "STATE",
    "NIO PHASE",
    "REVISION",
    "ROLLOUT",
    ...(versions ? ["VERSION"] : []),
    "SINCE",
    "CONDITION",
  ];
  const footer = `\n${paint(style, "gray", `NIO ${v.nio.generation} (from ${v.nio.source})`)}`;
  const wide = table({ ...style, width: Infinity }, header, rows.map((r) => r.cells));
  if (tableWidth(wide) <= style.width) return wide + footer;
  // Too wide for the terminal: the condition goes on a line of its own under its row.
  const narrow: Row[] = [];
  for (const r of rows) {
    narrow.push(r.cells.slice(0, cols));
    const [since, note] = [r.cells[cols], r.cells[cols + 1]].map((x) => (typeof x === "object" ? x.text : x ?? ""));
    if (note) narrow.push({ line: `${r.below}  ${since ? paint(style, "gray", `${since} `) : ""}${note}` });
  }
  return table(style, header.slice(0, cols), narrow) + footer;
}

/** Entry point of `nico describe`; answers the exit code. */
export function describe(args: string[], now = new Date()): Promise<number> {
  return showCluster("describe", args, FLAGS, DESCRIBE_HELP, now, (v, flags) => {
    const style = stdoutStyle(typeof flags.color === "string" ? flags.color : undefined);
    const showConditions = flags["show-conditions"] === "all" ? "all" : "problems";
    return renderDescribe(v, style, { showConditions, now });
  });
}
