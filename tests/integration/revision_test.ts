/**
 * Pinned revisions against a real Git server (git daemon on loopback):
 * every node gets the commit the branch resolves to, `status.revision` shows
 * it, and a new commit on the branch rolls out node by node.
 */
import assert from "node:assert/strict";
import type { KubernetesCluster } from "../../crds/kubernetescluster.ts";
import { KUBERNETES_CLUSTERS } from "../../crds/kubernetescluster.ts";
import { NIXOS_CONFIGURATIONS } from "../../core/contract/nio.ts";
import type { KubeObject } from "../../lib/kube/client.ts";
import { EVENTS } from "../../lib/kube/resources.ts";
import type { NixosConfiguration } from "../../core/contract/nio.ts";
import { startGitServer } from "../../testing/git_server.ts";
import { changingSwitches, maxConcurrent, switchOrder, switchWindows } from "../../testing/switches.ts";
import { eventually } from "../../testing/helpers.ts";
import { createMachines, machinesDiscovered } from "../../testing/nico.ts";
import { world } from "../../testing/world.ts";

Deno.test("nodes are pinned to the resolved commit, and a new commit rolls out node by node", async () => {
  await using git = await startGitServer();
  await using w = await world("pin", {
    nio: { applyDelayMs: 300 },
    nico: { resolveRefs: true, refPollIntervalMs: 300 },
  });
  const { cp, ns, nio } = w;
  const first = await git.head();
  await createMachines(cp.client, ns, ["cp-1", "w-1", "w-2"]);
  await machinesDiscovered(cp.client, ns, ["cp-1", "w-1", "w-2"]);
  await cp.client.create(KUBERNETES_CLUSTERS, {
    metadata: { name: "c", namespace: ns },
    spec: {
      gitRepo: git.url,
      ref: "main",
      controlPlane: { machines: ["cp-1"] },
      dataPlane: { machines: ["w-1", "w-2"] },
    },
  } as KubernetesCluster);
  const ready = await w.until("Ready on the first commit", (c) => c.status?.phase === "Ready", 60_000);
  assert.equal(ready.status!.revision, first);
  assert.equal(ready.status!.conditions!.find((x) => x.type === "RevisionResolved")?.status, "True");
  const refs = async () =>
    Object.fromEntries(
      (await cp.client.list<NixosConfiguration>(NIXOS_CONFIGURATIONS, { namespace: ns })).items.map((
        x,
      ) => [x.spec.machineRef.name, x.spec.ref]),
    );
  assert.deepEqual(await refs(), { "cp-1": first, "w-1": first, "w-2": first });

  // A new commit on main: the nodes move to it one at a time, workers first. What the hosts did comes from
  // the simulator's record (NIO v1's own status says Ready before a host ran anything).
  const since = Date.now();
  const second = await git.commit("second");
  await eventually(
    "every node on the second commit",
    async () => Object.values(await refs()).every((r) => r === second),
    60_000,
  );
  const done = await w.until(
    "Ready on the second commit",
    (c) => c.status?.phase === "Ready" && c.status.revision === second,
    30_000,
  );
  assert.equal(done.status!.rollout!.upToDate, 3);
  const windows = changingSwitches(switchWindows(nio.history)).filter((w) => w.start >= since);
  assert.deepEqual(switchOrder(windows, since), ["c.w-1", "c.w-2", "c.cp-1"]);
  assert.equal(
    maxConcurrent(windows, () => true),
    1,
    `a node switched while another did: ${JSON.stringify(windows)}`,
  );
});

Deno.test("finding 7: a password in gitRepo never reaches a condition or an Event; the error says what failed", async () => {
  await using w = await world("redact", { nio: false, nico: false });
  const { cp, ns } = w;
  const closed = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (closed.addr as Deno.NetAddr).port;
  closed.close(); // nothing listens there: git cannot connect
  const password = "hunter2-in-the-url";
  // The CRD's rules and the webhook refuse credentials in spec.gitRepo, so the password comes from the
  // operator's --default-git-repo, the one way left for a URL with credentials to reach the reconciler.
  await w.startNico({
    resolveRefs: true,
    refPollIntervalMs: 300,
    defaultGitRepo: `https://deploy:${password}@127.0.0.1:${port}/flake.git`,
  });
  await createMachines(cp.client, ns, ["cp-1"]);
  await cp.client.create(KUBERNETES_CLUSTERS, {
    metadata: { name: "c", namespace: ns },
    spec: { ref: "main", controlPlane: { machines: ["cp-1"] } },
  } as KubernetesCluster);
  const seen: string[] = [];
  const c = await eventually(
    "the resolve error in status",
    async () => {
      const x = await cp.client.get<KubernetesCluster>(KUBERNETES_CLUSTERS, "c", ns);
      for (const k of x?.status?.conditions ?? []) seen.push(k.message ?? "");
      const rev = x?.status?.conditions?.find((k) => k.type === "RevisionResolved");
      return rev?.reason === "ResolveFailed" ? x : undefined;
    },
    30_000,
    50,
  );
  const rev = c.status!.conditions!.find((k) => k.type === "RevisionResolved")!;
  assert.equal(
    rev.message,
    `git ls-remote https://127.0.0.1:${port}/flake.git failed: could not reach the repository`,
  );
  const events = await eventually("the phase Event", async () => {
    const list = (await cp.client.list<KubeObject & { note?: string; reason?: string }>(EVENTS, { namespace: ns }))
      .items;
    return list.some((e) => e.reason === "PhaseProvisioning") ? list : undefined;
  }, 30_000);
  const texts = [...seen, ...events.map((e) => `${e.reason}: ${e.note ?? ""}`)];
  assert.ok(texts.some((t) => t.includes(`127.0.0.1:${port}/flake.git`)), JSON.stringify(texts));
  for (const t of texts) assert.ok(!t.includes(password) && !t.includes("deploy:"), t);
});

Deno.test("an unknown ref blocks a new cluster with a clear reason", async () => {
  await using git = await startGitServer();
  await using w = await world("badref", { nico: { resolveRefs: true, refPollIntervalMs: 300 }, nio: false });
  const { cp, ns } = w;
  await createMachines(cp.client, ns, ["cp-1"]);
  await cp.client.create(KUBERNETES_CLUSTERS, {
    metadata: { name: "c", namespace: ns },
    spec: { gitRepo: git.url, ref: "no-such-branch", controlPlane: { machines: ["cp-1"] } },
  } as KubernetesCluster);
  const c = await w.until(
    "RefResolutionFailed",
    (x) => x.status?.conditions?.find((k) => k.type === "Ready")?.reason === "RefResolutionFailed",
    30_000,
  );
  assert.match(c.status!.conditions!.find((k) => k.type === "RevisionResolved")!.message, /no-such-branch/);
  assert.equal(
    (await cp.client.list(NIXOS_CONFIGURATIONS, { namespace: ns })).items.length,
    0,
    "nothing is rendered",
  );
});
