/** core/rollout/remediation.ts and core/status/remediation.ts: every rule of what NICO does about unhealthy members. */
import assert from "node:assert/strict";
import type { Unhealthy } from "../../core/nodes/health.ts";
import {
  decideRemediation,
  type PlaneFacts,
  quorum,
  remediationSettings,
  unhealthyAllowed,
} from "../../core/rollout/remediation.ts";
import { remediationCondition } from "../../core/status/remediation.ts";
import { markValue, parseMark } from "../../core/machines/marks.ts";
import { KubernetesClusterSpec } from "../../crds/kubernetescluster.ts";

const T0 = new Date("2026-01-01T00:00:00Z");
const at = (min: number) => new Date(T0.getTime() + min * 60_000);
const sick = (machine: string, sinceMin = 0): Unhealthy => ({
  machine,
  reason: "NodeNotReady",
  message: `Node ${machine} NotReady for 6m`,
  since: at(sinceMin),
});
const SETTINGS = remediationSettings(
  KubernetesClusterSpec.parse({ controlPlane: { count: 1, remediation: {} } }).controlPlane,
)!;

/** What every member's facts record says, unless a case says otherwise: when it joined, and its replacement. */
type Each = { createdAt?: Date; replacement?: string | undefined };

/** `o` without {@link Each}, and the facts of `members` with it: joined long ago, replaced by `spare`. */
function split(
  members: string[],
  spare: string,
  o: Partial<PlaneFacts> & Each,
): Partial<PlaneFacts> & Pick<PlaneFacts, "facts"> {
  const { createdAt = at(-600), replacement: _, ...rest } = o;
  const each = { createdAt, replacement: "replacement" in o ? o.replacement : spare };
  return { facts: new Map(members.map((m) => [m, each])), ...rest };
}

/** A control plane of `n` (cp-1 … cp-n), cp-(n+1) free; `down` unhealthy, the rest Ready. */
function cp(n: number, down: string[], o: Partial<PlaneFacts> & Each = {}): PlaneFacts {
  const members = Array.from({ length: n }, (_, i) => `cp-${i + 1}`);
  return {
    plane: "controlPlane",
    settings: SETTINGS,
    mode: "selector",
    selector: "role=cp",
    members,
    ready: members.filter((m) => !down.includes(m)),
    unhealthy: down.map((m, i) => sick(m, i)),
    inFlight: [],
    marks: [],
    bootstrap: "cp-1",
    endpointIsBootstrap: false,
    nodesKnown: true,
    provisioned: true,
    paused: false,
    now: at(10),
    ...split(members, `cp-${n + 1}`, o),
  };
}

/** A worker plane w-1 … w-n, spare w-(n+1). */
function workers(n: number, down: string[], o: Partial<PlaneFacts> & Each = {}): PlaneFacts {
  const members = Array.from({ length: n }, (_, i) => `w-${i + 1}`);
  return {
    ...cp(1, []),
    plane: "dataPlane",
    selector: "role=worker",
    members,
    ready: members.filter((m) => !down.includes(m)),
    unhealthy: down.map((m, i) => sick(m, i)),
    ...split(members, `w-${n + 1}`, o),
  };
}

/** etcd's members for cp-1 … cp-n, healthy as given. */
function etcdOf(healthy: boolean[]): NonNullable<PlaneFacts["etcd"]> {
  const members = healthy.map((h, i) => ({
    id: String(i + 1),
    name: `cp-${i + 1}`,
    peerURLs: [],
    isLearner: false,
    healthy: h,
    leader: i === 0,
    alarms: [],
  }));
  return { members, memberOf: new Map(members.map((m) => [m.name, m.id])) };
}

interface Case {
  name: string;
  facts: PlaneFacts;
  /** `take <machine> [spare]` or `refuse <Reason>` or `healthy`. */
  want: string;
  message?: RegExp;
}

const settings = (o: Partial<typeof SETTINGS>) => ({ ...SETTINGS, ...o });

const cases: Case[] = [
  { name: "nothing unhealthy", facts: workers(3, []), want: "healthy" },
  { name: "a worker: taken out, the spare named", facts: workers(3, ["w-2"]), want: "take w-2 w-4" },
  {
    name: "two workers: the one unhealthy the longest first",
    facts: workers(5, ["w-4", "w-2"]),
    want: "take w-4 w-6",
  },
  {
    name: "a worker with no spare: taken out anyway (the plane goes Underprovisioned)",
    facts: workers(3, ["w-1"], { replacement: undefined }),
    want: "take w-1",
  },
  {
    name: "maxUnhealthy 40% of 5 is 2: three unhealthy is too many",
    facts: workers(5, ["w-1", "w-2", "w-3"]),
    want: "refuse TooManyUnhealthy",
    message: /3 of 5 worker nodes are unhealthy, more than maxUnhealthy allows \(2: 40%\)/,
  },
  { name: "…two is not", facts: workers(5, ["w-1", "w-2"]), want: "take w-1 w-6" },
  {
    name: "maxUnhealthy as a count",
    facts: workers(5, ["w-1", "w-2"], { settings: settings({ maxUnhealthy: 1 }) }),
    want: "refuse TooManyUnhealthy",
  },
  {
    name: "explicit list without a spare: NICO says what to do and changes nothing",
    facts: workers(2, ["w-1"], { mode: "explicit", replacement: undefined }),
    want: "refuse ExplicitMachines",
    message: /replace w-1 in spec.dataPlane.machines, or add spec.dataPlane.spares/,
  },
  {
    name: "explicit list with a spare",
    facts: workers(2, ["w-1"], { mode: "explicit", replacement: "s-1" }),
    want: "take w-1 s-1",
  },
  {
    name: "first bring-up: nothing",
    facts: workers(2, ["w-1"], { provisioned: false }),
    want: "refuse Provisioning",
  },
  { name: "paused: nothing", facts: workers(2, ["w-1"], { paused: true }), want: "refuse Paused" },
  { name: "control plane of 3, one down: replaced", facts: cp(3, ["cp-2"]), want: "take cp-2 cp-4" },
  {
    name: "etcd seen: its dead member of three may leave",
    facts: cp(3, ["cp-2"], { etcd: etcdOf([true, false, true]) }),
    want: "take cp-2 cp-4",
  },
  {
    name: "etcd seen: a Node NotReady whose member is healthy while another member is dead: refused",
    facts: cp(3, ["cp-2"], { etcd: etcdOf([true, true, false]) }),
    want: "refuse QuorumWouldBeLost",
    message: /removing its etcd member would leave fewer healthy members than a majority \(etcd: 2\/3 healthy/,
  },
  {
    name: "etcd seen: quorum lost, even with Nodes Ready: refused",
    facts: cp(3, ["cp-2"], { etcd: etcdOf([true, false, false]) }),
    want: "refuse QuorumWouldBeLost",
    message: /etcd has no healthy majority now/,
  },
  {
    name: "etcd answers without a leader (no member list): refused, though the Nodes count two of three",
    facts: cp(3, ["cp-2"], { etcd: { members: [], memberOf: new Map(), quorumLost: "etcd has lost quorum" } }),
    want: "refuse QuorumWouldBeLost",
    message: /cp-2 .*: etcd has lost quorum, so no new member can join; NICO replaces none/,
  },
  {
    name: "etcd seen: five, two Nodes NotReady, one of them on a dead member: that one leaves",
    facts: cp(5, ["cp-2", "cp-3"], { etcd: etcdOf([true, false, true, true, true]) }),
    want: "take cp-2 cp-6",
  },
  {
    name: "control plane of 3, two down: quorum is lost, nothing is done",
    facts: cp(3, ["cp-2", "cp-3"]),
    want: "refuse QuorumWouldBeLost",
    message: /1 of 3 control-plane members are healthy and etcd needs 2 for quorum.*bring a member back/,
  },
  { name: "control plane of 5, two down: three keep quorum", facts: cp(5, ["cp-4", "cp-5"]), want: "take cp-4 cp-6" },
  {
    name: "control plane of 4, two down: two do not keep quorum",
    facts: cp(4, ["cp-3", "cp-4"], { settings: settings({ maxUnhealthy: "100%" }) }),
    want: "refuse QuorumWouldBeLost",
  },
  {
    name: "control plane of 5, three down: quorum lost",
    facts: cp(5, ["cp-3", "cp-4", "cp-5"], { settings: settings({ maxUnhealthy: "100%" }) }),
    want: "refuse QuorumWouldBeLost",
  },
  { name: "control plane of 2, one down: quorum lost", facts: cp(2, ["cp-2"]), want: "refuse QuorumWouldBeLost" },
  {
    name: "control plane of 1: never (no quorum to keep)",
    facts: cp(1, ["cp-1"]),
    want: "refuse QuorumWouldBeLost",
    message: /a one-node control plane cannot be remediated/,
  },
  {
    name: "control plane of 3, one down and another not Ready (updating): not healthy enough",
    facts: cp(3, ["cp-2"], { ready: ["cp-1"] }),
    want: "refuse QuorumWouldBeLost",
  },
  {
    name: "control plane: one remediation at a time",
    facts: cp(3, ["cp-3"], { inFlight: ["cp-2"] }),
    want: "refuse OneAtATime",
  },
  {
    name: "control plane: never without a spare",
    facts: cp(3, ["cp-2"], { replacement: undefined }),
    want: "refuse NoSpare",
  },
  {
    name: "control plane: not while the workload API is away (quorum cannot be seen)",
    facts: cp(3, ["cp-2"], { nodesKnown: false }),
    want: "refuse WorkloadAPIUnavailable",
  },
  {
    name: "control plane: the bootstrap node that is the API endpoint is not replaced",
    facts: cp(3, ["cp-1"], { endpointIsBootstrap: true }),
    want: "refuse BootstrapIsEndpoint",
    message: /set spec.controlPlaneEndpoint/,
  },
  {
    name: "control plane: the bootstrap node with a controlPlaneEndpoint is like any other",
    facts: cp(3, ["cp-1"]),
    want: "take cp-1 cp-4",
  },
  {
    name: "a replacement that failed too is replaced while the plane had at most maxRetries remediations",
    facts: workers(3, ["w-3"], { marks: [at(0), at(3), at(6)], createdAt: at(1) }),
    want: "take w-3 w-4",
  },
  {
    name: "…and not beyond (RetryLimit)",
    facts: workers(3, ["w-3"], { marks: [at(0), at(3), at(6), at(8)], createdAt: at(1) }),
    want: "refuse RetryLimit",
    message: /4 remediations within 60m \(maxRetries 3\)/,
  },
  {
    name: "a long-serving member is no retry, however many remediations",
    facts: workers(3, ["w-3"], { marks: [at(0), at(3), at(6), at(8)], createdAt: at(-600) }),
    want: "take w-3 w-4",
  },
  {
    name: "marks older than retryPeriod do not count",
    facts: workers(3, ["w-3"], { marks: [at(-200), at(-150), at(-100), at(-70)], createdAt: at(-180) }),
    want: "take w-3 w-4",
  },
];

const show = (d: ReturnType<typeof decideRemediation>) =>
  d.kind === "take"
    ? `take ${d.target.machine}${d.spare ? ` ${d.spare}` : ""}`
    : d.kind === "refuse"
    ? `refuse ${d.reason}`
    : "healthy";

Deno.test("decideRemediation: each rule", async (t) => {
  for (const c of cases) {
    await t.step(c.name, () => {
      const d = decideRemediation(c.facts);
      assert.equal(show(d), c.want, d.kind === "refuse" ? d.message : "");
      if (c.message) assert.match(d.kind === "refuse" ? d.message : "", c.message);
    });
  }
});

Deno.test("quorum is a majority; maxUnhealthy percentages round up", () => {
  assert.deepEqual([1, 2, 3, 4, 5, 6, 7].map(quorum), [1, 2, 2, 3, 3, 4, 4]);
  assert.deepEqual([unhealthyAllowed("40%", 1), unhealthyAllowed("40%", 3), unhealthyAllowed("40%", 10)], [1, 2, 4]);
  assert.deepEqual([unhealthyAllowed(2, 10), unhealthyAllowed("2", 10), unhealthyAllowed("0%", 10)], [2, 2, 0]);
});

Deno.test("settings: remediation's defaults, 0s turns a check off, replaceUnhealthyAfter is an alias", () => {
  const parse = (plane: Record<string, unknown>) =>
    remediationSettings(KubernetesClusterSpec.parse({ controlPlane: { count: 1 }, dataPlane: plane }).dataPlane);
  assert.deepEqual(parse({ remediation: {} }), {
    notReadyMs: 300_000,
    startupMs: 1_200_000,
    unreachableMs: 300_000,
    maxUnhealthy: "40%",
    maxRetries: 3,
    retryPeriodMs: 3_600_000,
    field: "remediation",
  });
  assert.equal(parse({ remediation: { nodeStartupTimeout: "0s" } })?.startupMs, 0);
  const alias = parse({ replaceUnhealthyAfter: "15m" });
  assert.equal(alias?.unreachableMs, 900_000);
  assert.equal(alias?.notReadyMs, undefined, "the alias checks reachability only");
  assert.equal(
    parse({ remediation: { machineUnreachableTimeout: "1m" }, replaceUnhealthyAfter: "15m" })?.unreachableMs,
    60_000,
  );
  assert.equal(parse({}), undefined, "off unless set");
});

Deno.test("marks: NICO's reads back; a person's words are a mark without a reading", () => {
  const m = { cluster: "prod", plane: "controlPlane" as const, at: at(5), reason: "NodeNotReady", message: "a: b; c" };
  assert.deepEqual(parseMark(markValue(m)), m);
  assert.equal(parseMark("broken PSU, see ticket 12"), undefined);
});

Deno.test("the Remediating condition: in flight, refused, short of spares, or nothing to do", async (t) => {
  const mark = { cluster: "c", plane: "dataPlane" as const, at: at(0), reason: "NodeNotReady", message: "down" };
  await t.step("a remediation in flight is True and says where it stands", () => {
    const c = remediationCondition({
      decisions: [{ plane: "dataPlane", kind: "healthy" }],
      inFlight: [{
        machine: "w-1",
        plane: "dataPlane",
        mark,
        stage: "waiting",
        replacements: [{ machine: "w-4", ready: false }],
      }],
      short: [],
    });
    assert.equal(`${c.status} ${c.reason}`, "True Remediating");
    assert.match(c.message, /w-1 \(NodeNotReady\) is replaced by w-4 \(joining\)/);
  });
  await t.step("a refusal is False with its reason, the control plane first", () => {
    const c = remediationCondition({
      decisions: [
        decideRemediation(workers(5, ["w-1", "w-2", "w-3"])),
        decideRemediation(cp(3, ["cp-2", "cp-3"])),
      ],
      inFlight: [],
      short: [],
    });
    assert.equal(`${c.status} ${c.reason}`, "False QuorumWouldBeLost");
    assert.match(c.message, /^control-plane: .*; worker: .*maxUnhealthy/);
  });
  await t.step("a plane left short by out-of-service Machines is NoSpare", () => {
    const c = remediationCondition({
      decisions: [{ plane: "dataPlane", kind: "healthy" }],
      inFlight: [],
      short: [{ plane: "dataPlane", members: 1, wanted: 2, selector: "role=worker", outOfService: ["w-1"] }],
    });
    assert.equal(`${c.status} ${c.reason}`, "False NoSpare");
    assert.match(c.message, /the worker plane is Underprovisioned \(1 of 2\): w-1 is out of service/);
  });
  await t.step("nothing to do", () => {
    const c = remediationCondition({ decisions: [{ plane: "dataPlane", kind: "healthy" }], inFlight: [], short: [] });
    assert.equal(`${c.status} ${c.reason}`, "False NoUnhealthyNodes");
  });
});
