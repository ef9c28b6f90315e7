/** etcd's holds on a rollout plan (core/rollout/etcdhold.ts): which steps etcd judges, and the plan they narrow. */
import assert from "node:assert/strict";
import { etcdTargets, holdForEtcd, UNSEEN_SWITCH_WAIT_MS, unseenHolds } from "../../core/rollout/etcdhold.ts";

Deno.test("etcd holds narrow the plan as drains do", () => {
  const plan = {
    create: ["cp-4"],
    update: ["cp-1", "w-1"],
    remove: ["cp-3"],
    pending: ["cp-1", "w-1"],
    removing: ["cp-3"],
    updating: [],
    waiting: "at most 1 worker(s) unavailable at once",
  };
  assert.deepEqual(etcdTargets(plan, new Set(["cp-1", "cp-3", "cp-4"]), new Set(["cp-1", "cp-3"])), {
    changing: ["cp-1"],
    removing: ["cp-3"],
    creating: ["cp-4"],
    departing: ["cp-3"],
  });
  assert.deepEqual(
    etcdTargets(
      { ...plan, remove: [], removing: ["w-2", "cp-3", "cp-7"] },
      new Set(["cp-1", "cp-3", "cp-4"]),
      new Set(["cp-1", "cp-3"]),
    )
      .departing,
    ["cp-3"],
    "departing later too, on the control plane, and configured",
  );
  const held = holdForEtcd(plan, [
    { machine: "cp-3", why: "its etcd member cp-3 (1003) is removed first" },
    { machine: "cp-3", why: "twice" },
    { machine: "cp-9", why: "not in the plan" },
  ]);
  assert.deepEqual([held.create, held.update, held.remove], [["cp-4"], ["cp-1", "w-1"], []]);
  const noJoin = holdForEtcd(plan, [{ machine: "cp-4", why: "etcd admits no new member" }]);
  assert.deepEqual(
    [noJoin.create, noJoin.update, noJoin.remove],
    [[], ["cp-1", "w-1"], ["cp-3"]],
    "a create is held too",
  );
  assert.deepEqual(held.etcdHeld, [{ machine: "cp-3", why: "its etcd member cp-3 (1003) is removed first" }]);
  assert.equal(
    held.waiting,
    "cp-3: its etcd member cp-3 (1003) is removed first; at most 1 worker(s) unavailable at once",
  );
  // A new control-plane node the planner did not pick in this pass (another member is down) is held all the same,
  // and named: status.rollout.etcdHeld names every node etcd holds.
  const later = { ...plan, create: [], pending: ["cp-5", "cp-1", "w-1"] };
  const cp5 = new Set(["cp-1", "cp-3", "cp-5"]);
  assert.deepEqual(etcdTargets(later, cp5, new Set(["cp-1", "cp-3"])).creating, ["cp-5"]);
  const dead = holdForEtcd(later, [{ machine: "cp-5", why: "etcd admits no new member while cp-2 does not answer" }]);
  assert.deepEqual(dead.etcdHeld, [{ machine: "cp-5", why: "etcd admits no new member while cp-2 does not answer" }]);
  assert.equal(holdForEtcd(plan, []), plan, "no hold: the same plan");
  assert.deepEqual(plan.remove, ["cp-3"], "the plan given is not modified");
});

Deno.test("while etcd's members cannot be seen, no control-plane node leaves or joins, and switches wait a while", () => {
  const plan = {
    create: ["cp-4"],
    update: ["cp-1", "w-1"],
    remove: ["cp-3"],
    pending: ["cp-4", "cp-1", "w-1"],
    removing: ["cp-3"],
    updating: [],
  };
  const targets = etcdTargets(plan, new Set(["cp-1", "cp-3", "cp-4"]), new Set(["cp-1", "cp-3"]));
  const held = holdForEtcd(plan, unseenHolds(targets, "no member answers", { unseenForMs: 5_000, voters: 3 }));
  assert.deepEqual([held.create, held.update, held.remove], [[], ["w-1"], []]);
  assert.deepEqual(held.etcdHeld?.map((h) => h.machine), ["cp-3", "cp-4", "cp-1"]);
  assert.match(held.waiting!, /^cp-3: NICO cannot see etcd's members \(no member answers\): it leaves once it can/);
  // Unseen for longer: etcd is down rather than unseen, and a switch (a fix) goes; leaving and joining still wait.
  const later = holdForEtcd(
    plan,
    unseenHolds(targets, "no member answers", { unseenForMs: UNSEEN_SWITCH_WAIT_MS, voters: 3 }),
  );
  assert.deepEqual([later.create, later.update, later.remove], [[], ["cp-1", "w-1"], []]);
  // One voter has no one to hand leadership to: its switch never waits.
  const alone = holdForEtcd(plan, unseenHolds(targets, "no member answers", { unseenForMs: 0, voters: 1 }));
  assert.deepEqual(alone.update, ["cp-1", "w-1"]);
});
