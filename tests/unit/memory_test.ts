/** controllers/cluster/memory.ts: one memory per cluster, forgotten in one place with what it releases. */
import assert from "node:assert/strict";
import { ClusterMemories } from "../../controllers/cluster/memory.ts";
import { RevisionTracker } from "../../controllers/cluster/revisions.ts";
import { WorkloadCache } from "../../controllers/cluster/workload/cache.ts";
import { RevisionResolver } from "../../lib/git/resolver.ts";
import { silentLogger } from "../../lib/runtime/log.ts";

const COMMIT = "0123456789abcdef0123456789abcdef01234567";

/** Memories with a workload cache and a revision tracker that reach nothing (a pinned commit, a bad kubeconfig). */
function world() {
  const resolver = new RevisionResolver({
    resolve: () => Promise.reject(new Error("no git in a unit test")),
  });
  const tracker = new RevisionTracker(resolver);
  const workloads = new WorkloadCache({ log: silentLogger, onChange: () => {} });
  const memories = new ClusterMemories({ workloads, revisionTracker: tracker });
  /** What a pass of cluster `key` keeps outside its memory: a tracked revision and a workload entry. */
  const touch = (key: string) => {
    assert.deepEqual(tracker.lookup(key, { url: "https://git.example.test/x.git", ref: COMMIT }), { commit: COMMIT });
    assert.equal(workloads.view(key, "not a kubeconfig").api.state, "Unavailable");
  };
  return { memories, tracker, workloads, touch, stop: () => resolver.stop() };
}

Deno.test("one memory per cluster: the same one each pass, a fresh one for a cluster created again", () => {
  const memories = new ClusterMemories();
  const a = memories.of("ns/a", "uid-a");
  a.announcedPhase = "Ready";
  a.freeSince.set("m-1", 1);
  a.problems.allow(a.key, "NoGitRepo", "set spec.gitRepo", 0);
  assert.equal(memories.of("ns/a", "uid-a"), a, "the same cluster finds what it remembered");
  const b = memories.of("ns/b", "uid-b");
  assert.notEqual(b, a);
  assert.equal(b.freeSince.size, 0, "nothing is shared between clusters");
  assert.deepEqual(memories.keys(), ["ns/a", "ns/b"]);
  assert.equal(memories.peek("ns/c"), undefined, "peek makes nothing");
  assert.equal(memories.size, 2);

  const again = memories.of("ns/a", "uid-a2");
  assert.notEqual(again, a, "deleted and created again under the same name: nothing carried over");
  assert.equal(again.announcedPhase, undefined);
  assert.equal(again.freeSince.size, 0);
  assert.ok(again.problems.allow(again.key, "NoGitRepo", "set spec.gitRepo", 1), "its first Warning is told");
  assert.equal(memories.peek("ns/a"), again);
  assert.equal(memories.size, 2);

  memories.forget("ns/a");
  memories.forget("ns/a");
  assert.deepEqual(memories.keys(), ["ns/b"], "forgetting twice is fine");
  assert.equal(memories.of("ns/a", "uid-a2").announcedPhase, undefined, "a forgotten cluster starts over");
});

Deno.test("forget releases the cluster's workload connection and revision, and only that cluster's", async () => {
  const w = world();
  try {
    for (const key of ["ns/a", "ns/b"]) {
      w.memories.of(key, `uid-${key}`);
      w.touch(key);
    }
    assert.deepEqual(w.memories.kept(), {
      memories: ["ns/a", "ns/b"],
      workloads: ["ns/a", "ns/b"],
      revisions: ["ns/a", "ns/b"],
    });
    w.memories.forget("ns/a");
    assert.deepEqual(w.memories.kept(), { memories: ["ns/b"], workloads: ["ns/b"], revisions: ["ns/b"] });
    w.memories.of("ns/b", "uid-other");
    assert.deepEqual(
      w.memories.kept(),
      { memories: ["ns/b"], workloads: [], revisions: [] },
      "a cluster created again under the same name starts without the old one's connection and revision",
    );
  } finally {
    await w.stop();
  }
});

Deno.test("forgetAll drops every cluster, with connections and revisions no memory names", async () => {
  const w = world();
  try {
    for (let i = 0; i < 20; i++) {
      w.memories.of(`ns/c-${i}`, `uid-${i}`).remediationSteps.set("m", new Set(["RemediationRemoving"]));
      w.touch(`ns/c-${i}`);
    }
    w.touch("ns/orphan");
    assert.equal(w.memories.size, 20);
    assert.equal(w.memories.kept().workloads.length, 21);
    assert.equal(w.tracker.usersOf({ url: "https://git.example.test/x.git", ref: COMMIT }).length, 21);
    w.memories.forgetAll();
    assert.deepEqual(w.memories.kept(), { memories: [], workloads: [], revisions: [] });
    assert.equal(w.workloads.size, 0);
    assert.deepEqual(w.tracker.usersOf({ url: "https://git.example.test/x.git", ref: COMMIT }), []);
  } finally {
    await w.workloads.closeAll();
    await w.stop();
  }
});
