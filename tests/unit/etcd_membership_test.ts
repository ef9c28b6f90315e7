/** etcd's membership as NICO judges it (core/etcd/members.ts, core/etcd/membership.ts), by tables. */
import assert from "node:assert/strict";
import { mayRemove, mayTakeDown, memberOn, type MemberView, quorumFacts, urlHost } from "../../core/etcd/members.ts";
import { type MembershipInput, planMembership } from "../../core/etcd/membership.ts";

const host = (n: number) => `127.0.9.${n}`;
function m(n: number, o: Partial<MemberView> = {}): MemberView {
  return {
    id: String(1000 + n),
    name: `cp-${n}`,
    peerURLs: [`https://${host(n)}:2380`],
    isLearner: false,
    healthy: true,
    leader: false,
    alarms: [],
    ...o,
  };
}
const nodes = (...ns: number[]) => ns.map((n) => ({ machine: `cp-${n}`, address: host(n) }));
const NOW = new Date("2026-06-01T12:00:00Z");
function input(members: MemberView[], o: Partial<MembershipInput> = {}): MembershipInput {
  return {
    members,
    nodes: nodes(1, 2, 3),
    removing: [],
    changing: [],
    unstartedSince: new Map(),
    now: NOW,
    startupTimeoutMs: 600_000,
    ...o,
  };
}
/** The plan in one line per part, for tables. */
function summary(i: MembershipInput): string[] {
  const p = planMembership(i);
  const a = p.action;
  return [
    a ? (a.kind === "moveLeader" ? `move ${a.from.name}→${a.to.name}` : `remove ${a.member.id}`) : "no action",
    ...p.holds.map((h) => `hold ${h.machine}: ${h.why}`),
    ...p.orphans.map((o) => `orphan ${o.member.id}`),
    ...(p.blocked ? [`blocked: ${p.blocked}`] : []),
  ];
}

Deno.test("members are found by the host of their peer URL, IPv6 too", () => {
  assert.equal(memberOn([m(1)], host(1))?.name, "cp-1");
  const v6 = m(7, { peerURLs: ["https://[fd00::7]:2380"] });
  assert.equal(memberOn([v6], "fd00::7")?.name, "cp-7");
  assert.equal(memberOn([v6], "[FD00::7]")?.name, "cp-7");
  assert.equal(urlHost("not a url"), undefined);
});

Deno.test("quorum over voting members: what a step or a removal may cost", async (t) => {
  const cases: [string, MemberView[], string, boolean, boolean][] = [
    ["three healthy: one may go down, or leave", [m(1), m(2), m(3)], "1001", true, true],
    ["one of three down: no other may go down, or leave", [m(1), m(2), m(3, { healthy: false })], "1001", false, false],
    ["the dead one of three may leave", [m(1), m(2), m(3, { healthy: false })], "1003", true, true],
    ["two down of three: nothing", [m(1), m(2, { healthy: false }), m(3, { healthy: false })], "1003", false, false],
    ["two members: none may go down", [m(1), m(2)], "1001", false, true],
    ["one of two dead: no quorum to agree on a removal", [m(1), m(2, { healthy: false })], "1002", false, false],
    ["a learner costs nothing", [m(1), m(2), m(3, { isLearner: true })], "1003", true, true],
    ["five, one down: another may go down", [m(1), m(2), m(3), m(4), m(5, { healthy: false })], "1001", true, true],
    ["the last member never leaves", [m(1)], "1001", false, false],
    ["an unknown id is not removed", [m(1), m(2), m(3)], "9", true, false],
  ];
  for (const [name, members, id, down, remove] of cases) {
    await t.step(name, () => {
      assert.equal(mayTakeDown(members, id), down, "mayTakeDown");
      assert.equal(mayRemove(members, id), remove, "mayRemove");
    });
  }
  assert.deepEqual(quorumFacts([m(1), m(2), m(3), m(4, { isLearner: true })]), {
    voters: 3,
    healthyVoters: 3,
    quorum: 2,
    tolerance: 1,
  });
});

const leader1 = [m(1, { leader: true }), m(2), m(3)];
/** planMembership's table: a name, the input, the plan in one line per part. */
const PLANS: [string, MembershipInput, string[]][] = [
  ["nothing to do", input(leader1), ["no action"]],
  ["changing the leader: leadership moves first", input(leader1, { changing: ["cp-1"] }), [
    "move cp-1→cp-2",
    "hold cp-1: leadership moves off its etcd member cp-1 (1001) first",
  ]],
  ["changing a follower: it may go down", input(leader1, { changing: ["cp-2"] }), ["no action"]],
  // One or two voters: any switch stops etcd for a while, so holding would only stop the rollout for good.
  [
    "a lone member changing: nothing to hand leadership to, nothing held",
    input([m(1, { leader: true })], {
      nodes: nodes(1),
      changing: ["cp-1"],
    }),
    ["no action"],
  ],
  [
    "two members, the follower changing: not held (two cannot lose one)",
    input([m(1, { leader: true }), m(2)], {
      nodes: nodes(1, 2),
      changing: ["cp-2"],
    }),
    ["no action"],
  ],
  [
    "two members, one of them leaving, the other changing: held until the leaver's member is removed",
    input([m(1), m(3, { leader: true })], {
      nodes: nodes(1, 3),
      changing: ["cp-1"],
      departing: ["cp-3"],
    }),
    [
      "no action",
      "hold cp-1: its switch would leave fewer healthy etcd members than a majority (2/2 healthy voting members (quorum 2): cp-1, cp-3)",
    ],
  ],
  [
    "…a departing learner has no vote: the switch goes",
    input([m(1, { leader: true }), m(3, { isLearner: true })], {
      nodes: nodes(1, 3),
      changing: ["cp-1"],
      departing: ["cp-3"],
    }),
    ["no action"],
  ],
  [
    "changing a follower while another is down: held",
    input([m(1, { leader: true }), m(2), m(3, { healthy: false })], {
      changing: ["cp-2"],
    }),
    [
      "no action",
      "hold cp-2: its switch would leave fewer healthy etcd members than a majority (2/3 healthy voting members (quorum 2): cp-1, cp-2)",
    ],
  ],
  ["removing a follower: its member goes first", input(leader1, { removing: ["cp-3"] }), [
    "remove 1003",
    "hold cp-3: its etcd member cp-3 (1003) is removed first",
  ]],
  [
    "removing a follower while another node changes: the switch waits for the next pass (3 → 2 voters, then judged)",
    input(leader1, { removing: ["cp-3"], changing: ["cp-2"], departing: ["cp-3"] }),
    [
      "remove 1003",
      "hold cp-3: its etcd member cp-3 (1003) is removed first",
      "hold cp-2: waits for the removal of etcd member cp-3 (1003) in this pass (one change to etcd at a time; the " +
      "switch is judged against the members left)",
    ],
  ],
  [
    "a healthy orphan removed while a node changes: the switch waits too (4 → 3 voters, one of them switching)",
    input([...leader1, m(4)], { changing: ["cp-2"] }),
    [
      "remove 1004",
      "hold cp-2: waits for the removal of etcd member cp-4 (1004) in this pass (one change to etcd at a time; the " +
      "switch is judged against the members left)",
      "orphan 1004",
    ],
  ],
  ["removing the leader: leadership moves first", input(leader1, { removing: ["cp-1"] }), [
    "move cp-1→cp-2",
    "hold cp-1: leadership moves off its etcd member cp-1 (1001) before it is removed",
  ]],
  ["removing a node whose member is gone already: nothing holds it", input([m(1), m(2)], { removing: ["cp-3"] }), [
    "no action",
  ]],
  [
    "removing when the rest would lose quorum: blocked",
    input([m(1), m(2, { healthy: false }), m(3)], {
      removing: ["cp-3"],
    }),
    [
      "no action",
      "hold cp-3: removing cp-3 (1003) would leave etcd without a healthy majority (2/3 healthy voting members (quorum 2): cp-1, cp-3)",
      "blocked: removing cp-3 (1003) would leave etcd without a healthy majority (2/3 healthy voting members (quorum 2): cp-1, cp-3)",
    ],
  ],
  ["an orphan on no node of the cluster is removed", input([...leader1, m(4, { healthy: false })]), [
    "remove 1004",
    "orphan 1004",
  ]],
  ["a removal for the rollout comes before an orphan", input([...leader1, m(4)], { removing: ["cp-3"] }), [
    "remove 1003",
    "hold cp-3: its etcd member cp-3 (1003) is removed first",
    "orphan 1004",
  ]],
  [
    "a failed join: unstarted past the timeout",
    input([...leader1, m(4, { name: "", healthy: false })], {
      nodes: nodes(1, 2, 3, 4),
      unstartedSince: new Map([["1004", new Date(NOW.getTime() - 601_000)]]),
    }),
    ["remove 1004", "orphan 1004"],
  ],
  [
    "a join still starting: left alone",
    input([...leader1, m(4, { name: "", healthy: false })], {
      nodes: nodes(1, 2, 3, 4),
      unstartedSince: new Map([["1004", new Date(NOW.getTime() - 60_000)]]),
    }),
    ["no action"],
  ],
  [
    "an orphan whose removal would lose quorum stays",
    input([m(1), m(2, { healthy: false }), m(4)], {
      nodes: nodes(1, 2),
    }),
    ["no action", "orphan 1004", "blocked: orphan cp-4 (1004) stays: removing it would lose quorum"],
  ],
  [
    "a learner that never caught up, past the timeout: an orphan",
    input([...leader1, m(4, { isLearner: true })], {
      nodes: nodes(1, 2, 3, 4),
      unstartedSince: new Map([["1004", new Date(NOW.getTime() - 601_000)]]),
    }),
    ["remove 1004", "orphan 1004"],
  ],
  // etcd refuses any member add while a voter does not answer: a dead member of a departing node goes first.
  [
    "a departing node's dead member is removed before its replacement joins",
    input([m(1, { leader: true }), m(2, { healthy: false }), m(3)], {
      nodes: nodes(1, 2, 3, 4),
      creating: ["cp-4"],
      departing: ["cp-2"],
    }),
    [
      "remove 1002",
      "hold cp-4: etcd admits no new member while cp-2 (1002) does not answer (its strict reconfiguration check): its member is removed first",
    ],
  ],
  [
    "a departing node's dead member goes even when no node is created in this pass",
    input([m(1, { leader: true }), m(2, { healthy: false }), m(3)], { departing: ["cp-2"] }),
    ["remove 1002"],
  ],
  [
    "a dead member of a node that stays: a new node waits, nothing is removed",
    input([m(1, { leader: true }), m(2), m(3, { healthy: false })], { nodes: nodes(1, 2, 3, 4), creating: ["cp-4"] }),
    [
      "no action",
      "hold cp-4: etcd admits no new member while cp-3 (1003) does not answer (its strict reconfiguration check): NICO waits for it to answer again or to be taken out of the control plane",
    ],
  ],
  [
    "two dead of three: the departing one's member stays (no quorum to agree on its removal)",
    input([m(1, { leader: true }), m(2, { healthy: false }), m(3, { healthy: false })], {
      nodes: nodes(1, 2, 3, 4),
      creating: ["cp-4"],
      departing: ["cp-2"],
    }),
    [
      "no action",
      "hold cp-4: etcd admits no new member while cp-2 (1002), cp-3 (1003) do not answer (its strict reconfiguration check): NICO waits for them to answer again or to be taken out of the control plane",
    ],
  ],
  [
    "a dead orphan on no node: the new node waits for its removal",
    input([m(1, { leader: true }), m(2), m(3), m(9, { healthy: false })], {
      nodes: nodes(1, 2, 3, 4),
      creating: ["cp-4"],
    }),
    [
      "remove 1009",
      "hold cp-4: etcd admits no new member while cp-9 (1009) does not answer (its strict reconfiguration check): its member is removed first",
      "orphan 1009",
    ],
  ],
  [
    "two departing, both dead, no quorum: nothing is removed, and the message does not promise it",
    input([m(1, { leader: true }), m(2, { healthy: false }), m(3, { healthy: false })], {
      nodes: nodes(1, 2, 3, 4),
      creating: ["cp-4"],
      departing: ["cp-2", "cp-3"],
    }),
    [
      "no action",
      "hold cp-4: etcd admits no new member while cp-2 (1002), cp-3 (1003) do not answer (its strict reconfiguration check): NICO waits for them to answer again or to be taken out of the control plane",
    ],
  ],
  [
    "a healthy departing member is not removed early: its replacement joins first",
    input([m(1, { leader: true }), m(2), m(3)], { nodes: nodes(1, 2, 3, 4), creating: ["cp-4"], departing: ["cp-2"] }),
    ["no action"],
  ],
  [
    "peer URLs on no node's address at all: nothing is removed, and status asks why",
    input([m(1, { leader: true }), m(2), m(3)], {
      nodes: [1, 2, 3].map((n) => ({ machine: `cp-${n}`, address: `cp-${n}.example.test` })),
    }),
    [
      "no action",
      "orphan 1001",
      "orphan 1002",
      "orphan 1003",
      "blocked: orphan cp-1 (1001) stays: the members on this cluster's control-plane nodes do not hold quorum by themselves (3/3 healthy voting members (quorum 2): cp-1, cp-2, cp-3); do the members' peer URLs name the nodes' addresses as cluster.nix does?",
    ],
  ],
];

Deno.test("planMembership: one change at a time, quorum first", async (t) => {
  for (const [name, i, want] of PLANS) await t.step(name, () => assert.deepEqual(summary(i), want));
});
