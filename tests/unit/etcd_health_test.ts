/** etcd's health as the status says it (core/etcd/health.ts, core/etcd/observed.ts), by tables. */
import assert from "node:assert/strict";
import type { MemberView } from "../../core/etcd/members.ts";
import { type EtcdSight, etcdSight, etcdStatus } from "../../core/etcd/health.ts";
import { etcdCondition } from "../../core/status/etcd.ts";
import { type EtcdSnapshot, memberViews } from "../../core/etcd/observed.ts";
import type { EtcdStatus } from "../../lib/etcd/client.ts";

function m(n: number, o: Partial<MemberView> = {}): MemberView {
  return {
    id: String(n),
    name: `cp-${n}`,
    peerURLs: [`https://127.0.8.${n}:2380`],
    isLearner: false,
    healthy: true,
    leader: n === 1,
    alarms: [],
    ...o,
  };
}
const AT = new Date("2026-06-01T12:00:00Z");
const seen = (...members: MemberView[]): EtcdSight => ({ kind: "seen", members, at: AT });

/** name, sight, membership plan, `status reason` wanted, what the message says. */
const CONDITION_CASES: [string, EtcdSight, Parameters<typeof etcdCondition>[1], string, string][] = [
  ["three healthy", seen(m(1), m(2), m(3)), undefined, "True Healthy", "3/3 healthy voting members (quorum 2)"],
  ["one member alone is healthy", seen(m(1)), undefined, "True Healthy", "leader cp-1"],
  [
    "a learner catching up",
    seen(m(1), m(2), m(3), m(4, { isLearner: true })),
    undefined,
    "True Healthy",
    "learning: cp-4",
  ],
  [
    "five, one down",
    seen(m(1), m(2), m(3), m(4), m(5, { healthy: false })),
    undefined,
    "False MemberUnhealthy",
    "cp-5 not healthy",
  ],
  ["three, one down", seen(m(1), m(2), m(3, { healthy: false })), undefined, "False QuorumAtRisk", "one more loss"],
  [
    "three, two down",
    seen(m(1), m(2, { healthy: false }), m(3, { healthy: false })),
    undefined,
    "False QuorumLost",
    "not answering: cp-2, cp-3",
  ],
  [
    // QuorumLost is what NicoControlPlaneQuorumLost (critical) fires on: tests/monitoring/alerts_test.yaml.
    "four voters, exactly half healthy (a dead member and a failed join's): quorum lost, not at risk",
    seen(m(1), m(2), m(3, { healthy: false }), m(4, { name: "", healthy: false })),
    undefined,
    "False QuorumLost",
    "quorum lost: 2/4 healthy voting members (quorum 3): cp-1, cp-2; not answering: cp-3, unstarted member 4",
  ],
  ["an alarm", seen(m(1), m(2, { alarms: ["NOSPACE"] }), m(3)), undefined, "False Alarm", "NOSPACE on cp-2"],
  [
    "an unstarted member counts against quorum until removed",
    seen(m(1), m(2), m(3), m(4, { name: "", healthy: false })),
    undefined,
    "False QuorumAtRisk",
    "unstarted member 4 not healthy",
  ],
  [
    "an orphan",
    seen(m(1), m(2), m(3)),
    {
      orphans: [{
        member: m(3),
        why: "cp-3 (3) is on https://127.0.8.3:2380, where no control-plane node of this cluster is",
      }],
    },
    "False OrphanMember",
    "NICO removes it while quorum holds",
  ],
  [
    "a blocked change",
    seen(m(1), m(2), m(3)),
    { orphans: [], blocked: "removing cp-3 would …" },
    "False MembershipBlocked",
    "removing cp-3",
  ],
  [
    "not looked at",
    { kind: "off", why: "workload connections are off" },
    undefined,
    "Unknown EtcdNotObserved",
    "off",
  ],
  [
    "unreachable",
    { kind: "unreachable", why: "no member answers: refused" },
    undefined,
    "Unknown EtcdUnreachable",
    "Node-based rules",
  ],
  [
    "members answer without a leader",
    { kind: "unreachable", why: "etcd has lost quorum", quorumLost: true },
    undefined,
    "False QuorumLost",
    "NICO replaces no control-plane member",
  ],
];

Deno.test("EtcdHealthy: the worst thing first", async (t) => {
  for (const [name, sight, plan, want, says] of CONDITION_CASES) {
    await t.step(name, () => {
      const c = etcdCondition(sight, plan);
      assert.equal(`${c.status} ${c.reason}`, want);
      assert.ok(c.message.includes(says), c.message);
    });
  }
});

const status = (id: string, leader: string, errors: string[] = []): EtcdStatus => ({
  memberId: id,
  leader,
  raftTerm: "2",
  raftIndex: "10",
  raftAppliedIndex: "10",
  isLearner: false,
  errors,
  dbSize: 1,
  version: "3.7.0",
});
const member = (id: string, name = `cp-${id}`) => ({
  id,
  name,
  peerURLs: [`https://127.0.8.${id}:2380`],
  clientURLs: [],
  isLearner: false,
});

Deno.test("snapshots: what a pass sees, and who is healthy and leads", async (t) => {
  const snap = (o: Partial<EtcdSnapshot>): EtcdSnapshot => ({
    at: AT,
    listErrors: [],
    statuses: new Map(),
    statusErrors: new Map(),
    alarms: [],
    ...o,
  });
  await t.step("no answer to the list: unreachable, saying why", () => {
    const s = etcdSight(snap({ listErrors: ["a: refused", "b: TLS refused", "c: no answer"] }), AT, 30_000);
    assert.deepEqual(s, {
      kind: "unreachable",
      why: "no member answers: a: refused, b: TLS refused and 1 more",
      at: AT,
    });
  });
  await t.step("no list, but members answer their status without a leader: quorum lost", () => {
    const s = etcdSight(snap({ listErrors: ["a: no answer"], leaderless: ["127.0.8.1", "127.0.8.2"] }), AT, 30_000);
    assert.deepEqual(s, {
      kind: "unreachable",
      why: "no member answers the member list, and the members on 127.0.8.1, 127.0.8.2 answer without a leader: " +
        "etcd has lost quorum",
      quorumLost: true,
      at: AT,
    });
  });
  await t.step("an old answer is no answer, from the time of that look", () => {
    const s = etcdSight(snap({ members: [member("1")] }), new Date(AT.getTime() + 31_000), 30_000);
    assert.equal(s.kind, "unreachable");
    assert.deepEqual(s.kind === "unreachable" && s.at, AT);
  });
  await t.step("health: answered, no errors, a leader known; the leader most name", () => {
    const v = memberViews(snap({
      members: [member("1"), member("2"), member("3"), member("4", "")],
      statuses: new Map([["1", status("1", "2")], ["2", status("2", "2")], ["3", status("3", "2", ["CORRUPT"])]]),
      alarms: [{ memberId: "3", alarm: "CORRUPT" }],
    }));
    assert.deepEqual(v.map((x) => [x.id, x.healthy, x.leader, x.alarms]), [
      ["1", true, false, []],
      ["2", true, true, []],
      ["3", false, false, ["CORRUPT"]],
      ["4", false, false, []],
    ]);
  });
  await t.step("status.etcd names the node on each member's address", () => {
    const s = etcdStatus([m(1), m(2, { isLearner: true }), m(9)], [
      { machine: "cp-1", address: "127.0.8.1" },
      { machine: "cp-2", address: "127.0.8.2" },
    ]);
    assert.deepEqual(s.members.map((x) => [x.name, x.node, x.learner]), [
      ["cp-1", "cp-1", false],
      ["cp-2", "cp-2", true],
      ["cp-9", undefined, false],
    ]);
    assert.deepEqual([s.voters, s.healthyVoters, s.quorum, s.tolerance], [2, 2, 2, 0]);
  });
});
