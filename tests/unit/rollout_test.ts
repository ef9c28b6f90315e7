/**
 * The rollout planner, simulated over many rounds with a seeded simulated
 * NIO; each step is logged and compared with a committed golden file, and
 * the safety invariants are asserted at every round.
 */
import assert from "node:assert/strict";
import {
  type PlanNode,
  planRollout,
  type ProvisioningMode,
  type RolloutInput,
  type RolloutOrder,
} from "../../core/rollout/plan.ts";
import type { Plane } from "../../core/machines/selection.ts";
import { assertGolden } from "../golden.ts";
import { QUIET } from "../rollout_input_kit.ts";

interface SimNode {
  machine: string;
  plane: Plane;
  exists: boolean;
  hash: string;
  appliedHash: string | undefined;
  /** Rounds left until NIO finishes applying. */
  applyLeft: number;
  failing: boolean;
  deleting: boolean;
  gone: boolean;
}

/** A tiny deterministic PRNG (mulberry32). */
function rng(seed: number) {
  return () => {
    seed |= 0;
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Scenario {
  name: string;
  cp: string[];
  workers: string[];
  /** Nodes that exist already, applied at hash "v1". */
  existing?: boolean;
  desired: string;
  order?: RolloutOrder;
  maxUnavailable?: number;
  /** Machines departing the cluster (they exist at v1). */
  departing?: { machine: string; plane: Plane }[];
  /** Round → action on the world. */
  events?: Record<number, (w: World) => void>;
  paused?: boolean;
  provisioning?: ProvisioningMode;
  seed?: number;
  rounds?: number;
}

class World {
  nodes = new Map<string, SimNode>();
  desired: string;
  log: string[] = [];
  constructor(readonly s: Scenario) {
    this.desired = s.desired;
    const add = (machine: string, plane: Plane, member: boolean) =>
      this.nodes.set(machine, {
        machine,
        plane,
        exists: !!s.existing || !member,
        hash: "v1",
        appliedHash: s.existing || !member ? "v1" : undefined,
        applyLeft: 0,
        failing: false,
        deleting: false,
        gone: false,
      });
    for (const m of s.cp) add(m, "controlPlane", true);
    for (const m of s.workers) add(m, "dataPlane", true);
    for (const d of s.departing ?? []) add(d.machine, d.plane, false);
  }
  members = () => [...this.s.cp, ...this.s.workers].map((m) => this.nodes.get(m)!);
  departing = () => (this.s.departing ?? []).map((d) => this.nodes.get(d.machine)!).filter((n) => !n.gone);
  planNode(n: SimNode): PlanNode {
    const available = n.exists && !n.deleting && n.appliedHash === n.hash && n.applyLeft === 0;
    return {
      machine: n.machine,
      plane: n.plane,
      exists: n.exists,
      upToDate: n.exists && n.hash === this.desired,
      available,
      failed: n.exists && n.failing && n.applyLeft === 0 && n.appliedHash !== n.hash,
      detail: n.failing ? "ApplyFailed" : available ? "applied" : "Converging",
    };
  }
}

function simulate(s: Scenario): string {
  const w = new World(s);
  const random = rng(s.seed ?? 7);
  const max = s.maxUnavailable ?? 1;
  for (let round = 1; round <= (s.rounds ?? 60); round++) {
    s.events?.[round]?.(w);
    const input: RolloutInput = {
      nodes: w.members().map((n) => w.planNode(n)),
      ...QUIET,
      departing: w.departing().map((n) => ({ machine: n.machine, plane: n.plane, deleting: n.deleting })),
      bootstrap: s.cp[0]!,
      order: s.order ?? "WorkersFirst",
      maxUnavailable: max,
      paused: s.paused ?? false,
      ...(s.provisioning ? { provisioning: s.provisioning, firstBringUp: !s.existing } : {}),
    };
    const plan = planRollout(input);
    for (const m of [...plan.create, ...plan.update]) {
      const n = w.nodes.get(m)!;
      n.exists = true;
      n.hash = w.desired;
      n.applyLeft = 1 + Math.floor(random() * 3);
    }
    for (const m of plan.remove) {
      const n = w.nodes.get(m)!;
      n.deleting = true;
      n.applyLeft = 1 + Math.floor(random() * 2);
    }
    // Invariants, after NICO's writes and before NIO moves. A node that never ran cannot be taken down.
    const cpDown = w.members().filter((n) =>
      n.plane === "controlPlane" && n.exists && n.appliedHash !== undefined && !w.planNode(n).available
    );
    const cpDeleting = w.departing().filter((n) => n.plane === "controlPlane" && n.deleting);
    assert.ok(
      cpDown.length + cpDeleting.length <= 1,
      `round ${round}: control plane ${[...cpDown, ...cpDeleting].map((n) => n.machine)} down at once`,
    );
    const wUpdating = w.members().filter((n) =>
      n.plane === "dataPlane" && n.exists && n.appliedHash !== undefined && !w.planNode(n).available
    );
    assert.ok(
      wUpdating.length <= max,
      `round ${round}: workers ${wUpdating.map((n) => n.machine)} updating at once (max ${max})`,
    );

    const acted = [
      ...plan.create.map((m) => `create ${m}`),
      ...plan.update.map((m) => `update ${m}`),
      ...plan.remove.map((m) => `remove ${m}`),
    ];
    const line = [
      `round ${String(round).padStart(2)}:`,
      acted.length ? acted.join(", ") : "-",
      `| updating: ${plan.updating.join(",") || "-"}`,
      `| pending: ${plan.pending.join(",") || "-"}`,
      ...(plan.halted ? [`| HALTED at ${plan.halted.machine}`] : []),
      ...(plan.waiting ? [`| ${plan.waiting}`] : []),
    ].join(" ");
    w.log.push(line);
    // NIO moves.
    for (const n of [...w.nodes.values()]) {
      if (n.gone || n.applyLeft === 0) continue;
      n.applyLeft--;
      if (n.applyLeft > 0) continue;
      if (n.deleting) n.gone = true;
      else if (!n.failing) n.appliedHash = n.hash;
    }
    const done = w.members().every((n) => w.planNode(n).upToDate && w.planNode(n).available) &&
      w.departing().length === 0;
    if (done) {
      w.log.push(`done after ${round} rounds`);
      break;
    }
  }
  return w.log.join("\n") + "\n";
}

const HA = { cp: ["cp-1", "cp-2", "cp-3"], workers: ["w-1", "w-2", "w-3"] };

const scenarios: Scenario[] = [
  { name: "initial-provisioning", ...HA, desired: "v1" },
  { name: "initial-provisioning-parallel", ...HA, desired: "v1", provisioning: "Parallel" },
  {
    name: "parallel-failing-node-halts-provisioning",
    ...HA,
    desired: "v1",
    provisioning: "Parallel",
    events: {
      1: (w) => (w.nodes.get("cp-2")!.failing = true),
      // NIO applies again and succeeds.
      8: (w) => Object.assign(w.nodes.get("cp-2")!, { failing: false, applyLeft: 1 }),
    },
  },
  { name: "git-change-parallel-keeps-one-at-a-time", ...HA, existing: true, desired: "v2", provisioning: "Parallel" },
  { name: "git-change-workers-first", ...HA, existing: true, desired: "v2" },
  { name: "git-change-control-plane-first", ...HA, existing: true, desired: "v2", order: "ControlPlaneFirst" },
  {
    name: "max-unavailable-2",
    cp: ["cp-1"],
    workers: ["w-1", "w-2", "w-3", "w-4", "w-5"],
    existing: true,
    desired: "v2",
    maxUnavailable: 2,
  },
  {
    name: "failing-worker-halts-then-spec-fix-resumes",
    ...HA,
    existing: true,
    desired: "v2",
    events: {
      1: (w) => (w.nodes.get("w-2")!.failing = true),
      12: (w) => {
        w.nodes.get("w-2")!.failing = false;
        w.desired = "v3";
      },
    },
  },
  {
    name: "scale-down-keeps-quorum",
    cp: ["cp-1", "cp-2", "cp-3"],
    workers: ["w-1"],
    existing: true,
    desired: "v2",
    ...QUIET,
    departing: [{ machine: "cp-4", plane: "controlPlane" }, { machine: "cp-5", plane: "controlPlane" }, {
      machine: "w-2",
      plane: "dataPlane",
    }, {
      machine: "w-3",
      plane: "dataPlane",
    }],
  },
  { name: "paused", ...HA, existing: true, desired: "v2", paused: true, rounds: 3 },
];

Deno.test("rollout planner: simulated rounds match the golden step logs", async (t) => {
  for (const s of scenarios) {
    await t.step(s.name, async () => {
      await assertGolden(`rollout-${s.name}.txt`, simulate(s));
    });
  }
});

Deno.test("rollout planner: invariants hold for random worlds", () => {
  for (let seed = 1; seed <= 200; seed++) {
    const r = rng(seed);
    const cp = Array.from({ length: 1 + Math.floor(r() * 5) }, (_, i) => `cp-${i + 1}`);
    const workers = Array.from({ length: Math.floor(r() * 6) }, (_, i) => `w-${i + 1}`);
    const out = simulate({
      name: `random-${seed}`,
      cp,
      workers,
      existing: r() < 0.7,
      desired: "v2",
      order: r() < 0.5 ? "WorkersFirst" : "ControlPlaneFirst",
      maxUnavailable: 1 + Math.floor(r() * 3),
      provisioning: r() < 0.5 ? "Parallel" : "BootstrapFirst",
      seed,
      rounds: 200,
    });
    assert.match(out, /done after \d+ rounds/, `seed ${seed} never finished:\n${out}`);
  }
});

Deno.test("rollout planner: Parallel creates everything at once only on the first bring-up", async (t) => {
  const node = (machine: string, plane: Plane, exists: boolean): PlanNode => ({
    machine,
    plane,
    exists,
    upToDate: exists,
    available: exists,
    failed: false,
  });
  const base: RolloutInput = {
    nodes: [
      node("cp-1", "controlPlane", false),
      node("cp-2", "controlPlane", false),
      node("w-1", "dataPlane", false),
    ],
    ...QUIET,
    departing: [],
    bootstrap: "cp-1",
    order: "WorkersFirst",
    maxUnavailable: 1,
    paused: false,
  };
  const grown: RolloutInput["nodes"] = [
    node("cp-1", "controlPlane", true),
    node("cp-2", "controlPlane", false),
    node("cp-3", "controlPlane", false),
    node("w-1", "dataPlane", false),
  ];
  const cases: { name: string; input: Partial<RolloutInput>; create: string[] }[] = [
    { name: "default (BootstrapFirst): the bootstrap node alone", input: {}, create: ["cp-1"] },
    {
      name: "Parallel, first bring-up: every node",
      input: { provisioning: "Parallel", firstBringUp: true },
      create: [
        "cp-1",
        "cp-2",
        "w-1",
      ],
    },
    {
      name: "Parallel on a cluster that was Ready: control-plane nodes one at a time",
      input: { provisioning: "Parallel", firstBringUp: false, nodes: grown },
      create: ["w-1", "cp-2"],
    },
    {
      name: "Parallel, first bring-up, paused: nothing",
      input: { provisioning: "Parallel", firstBringUp: true, paused: true },
      create: [],
    },
    {
      name: "Parallel, first bring-up, a failed node: nothing new",
      input: {
        provisioning: "Parallel",
        firstBringUp: true,
        nodes: [{ ...node("cp-1", "controlPlane", true), available: false, failed: true }, ...base.nodes.slice(1)],
      },
      create: [],
    },
  ];
  for (const c of cases) {
    await t.step(c.name, () => {
      assert.deepEqual(planRollout({ ...base, ...c.input }).create, c.create);
    });
  }
});
