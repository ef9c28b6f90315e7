/**
 * Rollouts when the workload API goes dark, on real API servers (a
 * kube-apiserver per workload cluster, simulated kubelets, the simulated
 * NIO v1): no second control-plane node changes while the API is away (an
 * independent watcher on NIO's configurations, not the dead API, proves it),
 * a change that keeps the API down is fixed forward without waiting for the
 * node timeout, a re-key reaches every node through an ordered rollout, and
 * a node that never says what it runs holds its step.
 */
import assert from "node:assert/strict";
import { KUBERNETES_CLUSTERS, type KubernetesCluster } from "../../crds/kubernetescluster.ts";
import { MACHINES, NIXOS_CONFIGURATIONS, type NixosConfiguration } from "../../core/contract/nio.ts";
import {
  CONFIGURATION_ANNOTATION,
  REGENERATE_IDENTITY_ANNOTATION,
  SPEC_HASH_ANNOTATION,
} from "../../core/contract/labels.ts";
import { Informer } from "../../lib/runtime/informer.ts";
import { silentLogger } from "../../lib/runtime/log.ts";
import { joinTokenSecret } from "../../core/contract/names.ts";
import type { KubeClient, KubeObject } from "../../lib/kube/client.ts";
import { NODES, SECRETS } from "../../lib/kube/resources.ts";
import { eventually, sharedControlPlane } from "../../testing/helpers.ts";
import { condition, type Scenario, startScenario } from "../../testing/scenario.ts";
import { changingSwitches, maxConcurrent, switchOrder, switchWindows } from "../../testing/switches.ts";
import { NODE_JOIN_ANNOTATION, NODE_REPORT_ANNOTATION } from "../../testing/workload.ts";

const env = sharedControlPlane();
const repo = (v: string) => `https://git.example.test/${v}.git`;
const CP = ["cp-1", "cp-2", "cp-3"];

const settled = (c: KubernetesCluster) =>
  c.status?.observedGeneration === c.metadata.generation && c.status?.phase === "Ready" &&
  condition(c, "UpToDate")?.status === "True" && condition(c, "WorkloadAPIAvailable")?.status === "True";

/**
 * Records every change of a configuration's spec (from NIO's objects; no workload API needed), with the project's
 * Informer: it resumes a watch the server ends, so no change goes unseen however long the test runs.
 */
function specWatcher(client: KubeClient, ns: string) {
  const changes: { at: number; name: string; gitRepo: string }[] = [];
  const informer = new Informer<NixosConfiguration>(client, NIXOS_CONFIGURATIONS, {
    namespace: ns,
    logger: silentLogger,
    resyncMs: 0,
  });
  const hash = (c: NixosConfiguration | undefined) => c?.metadata.annotations?.[SPEC_HASH_ANNOTATION];
  informer.onEvent((type, c, old) => {
    // The first list is where the watch starts, not a change.
    if (type === "delete" || !informer.hasSynced() || hash(old) === hash(c)) return;
    changes.push({ at: Date.now(), name: c.metadata.name, gitRepo: c.spec.gitRepo });
  });
  informer.start();
  return { ready: informer.synced(), changes, stop: () => informer.stop() };
}

async function upAt(s: Scenario, v: string, timeoutMs = 90_000) {
  return await s.until(`settled on ${v}`, (c) => settled(c) && c.spec.gitRepo === repo(v), timeoutMs);
}

Deno.test({
  name: "the workload API dies mid-rollout: no second control-plane node changes, and no node seen working is Failed",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const cp = await env.get();
    await using s = await startScenario(cp, "dark", { hostBlock: 41, nodeTimeoutMs: 12_000 });
    await s.createCluster({
      gitRepo: repo("v1"),
      controlPlane: { machines: CP },
      dataPlane: { machines: ["w-1", "w-2", "w-3"] },
      rollout: { order: "ControlPlaneFirst" },
    });
    await upAt(s, "v1");
    // A completed rollout first: every node's last change is recent, within the node timeout.
    await s.client.mergePatch(KUBERNETES_CLUSTERS, "c", s.ns, { spec: { gitRepo: repo("v2") } });
    await upAt(s, "v2");
    // The next one starts with cp-2, which rejoins slowly; the API dies while it does.
    await s.client.mergePatch(MACHINES, "cp-2", s.ns, {
      metadata: { annotations: { [NODE_JOIN_ANNOTATION]: "6000" } },
    });
    const watcher = specWatcher(s.client, s.ns);
    await watcher.ready;
    const v3At = Date.now();
    await s.client.mergePatch(KUBERNETES_CLUSTERS, "c", s.ns, { spec: { gitRepo: repo("v3") } });
    await eventually(
      "cp-2 applied v3 (its Node now rejoins slowly)",
      () => s.nio.history.some((e) => e.kind === "applied" && e.name === "c.cp-2" && e.at >= v3At),
      30_000,
    );
    await s.workloads.stopApi(s.ns, "c");
    const darkFrom = Date.now();
    await s.until(
      "WorkloadAPIAvailable=False",
      (c) => condition(c, "WorkloadAPIAvailable")?.status === "False",
      30_000,
    );
    // Longer than the node timeout (12 s) after the previous rollout's last changes.
    await eventually("the outage outlasts the node timeout", () => Date.now() - darkFrom > 16_000, 20_000, 500);
    const during = watcher.changes.filter((x) => x.at >= darkFrom && x.name.startsWith("c.cp-"));
    assert.deepEqual(during, [], "a control-plane node changed while the workload API was away");
    const c = await s.cluster();
    const failed = (c!.status?.conditions ?? []).find((x) => x.type === "Ready")?.message ?? "";
    assert.doesNotMatch(
      failed,
      /\b(cp-1|cp-3|w-\d) \(/,
      `a node seen working before the outage was blamed for it: ${failed}`,
    );
    await s.workloads.startApi(s.ns, "c");
    await upAt(s, "v3");
    await watcher.stop();
    const cpChanges = watcher.changes.filter((x) => x.name.startsWith("c.cp-"));
    assert.deepEqual(
      cpChanges.map((x) => x.name),
      ["c.cp-2", "c.cp-3", "c.cp-1"],
      "ControlPlaneFirst, bootstrap last",
    );
    // One at a time: each control-plane node changes only after the one before it applied its change.
    for (const [a, b] of cpChanges.slice(0, -1).map((x, k) => [x, cpChanges[k + 1]!] as const)) {
      const applied = s.nio.history.some((e) =>
        e.kind === "applied" && e.name === a.name && e.at >= a.at && e.at <= b.at
      );
      assert.ok(applied, `${b.name} changed before ${a.name} had applied its change`);
    }
  },
});

Deno.test({
  name: "a change that keeps the API down is fixed forward while it is down, without waiting for the node timeout",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const cp = await env.get();
    await using s = await startScenario(cp, "fixfwd", {
      hostBlock: 42,
      nodeTimeoutMs: 10 * 60_000,
      apiBrokenBy: (cfg) => cfg.spec.gitRepo.includes("broken"),
    });
    await s.createCluster({
      gitRepo: repo("v1"),
      controlPlane: { machines: ["cp-1"] },
      dataPlane: { machines: ["w-1"] },
      rollout: { order: "ControlPlaneFirst" },
    });
    await upAt(s, "v1");
    await s.client.mergePatch(KUBERNETES_CLUSTERS, "c", s.ns, { spec: { gitRepo: repo("broken") } });
    await s.until(
      "the API down after cp-1 took the broken spec",
      (c) => condition(c, "WorkloadAPIAvailable")?.status === "False",
      30_000,
    );
    const fixedAt = Date.now();
    await s.client.mergePatch(KUBERNETES_CLUSTERS, "c", s.ns, { spec: { gitRepo: repo("fixed") } });
    const cpFixed = await eventually("cp-1 gets the fix while the API is down", async () => {
      const cfg = await s.client.get<NixosConfiguration>(NIXOS_CONFIGURATIONS, "c.cp-1", s.ns);
      return cfg?.spec.gitRepo === repo("fixed") && cfg;
    }, 30_000);
    assert.ok(cpFixed, "no fix");
    assert.ok(Date.now() - fixedAt < 60_000, "the fix waited for the node timeout");
    await upAt(s, "fixed");
  },
});

Deno.test({
  name: "a re-key reaches every node through an ordered rollout, and each Node names the new configuration",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const cp = await env.get();
    await using s = await startScenario(cp, "rekey", { hostBlock: 43 });
    await s.createCluster({
      gitRepo: repo("v1"),
      controlPlane: { machines: ["cp-1"] },
      dataPlane: { machines: ["w-1", "w-2"] },
    });
    const before = await upAt(s, "v1");
    const since = Date.now();
    // The server token is lost; the user re-keys deliberately.
    await s.client.delete(SECRETS, joinTokenSecret("c"), s.ns);
    await s.until("IdentityLost", (c) => condition(c, "Ready")?.reason === "IdentityLost", 30_000);
    await s.client.mergePatch(KUBERNETES_CLUSTERS, "c", s.ns, {
      metadata: { annotations: { [REGENERATE_IDENTITY_ANNOTATION]: "true" } },
    });
    await s.until(
      "re-keyed and settled",
      (c) =>
        settled(c) && c.metadata.resourceVersion !== before.metadata.resourceVersion &&
        !c.metadata.annotations?.[REGENERATE_IDENTITY_ANNOTATION],
      90_000,
    );
    const windows = changingSwitches(switchWindows(s.nio.history)).filter((w) => w.start >= since);
    assert.deepEqual(switchOrder(windows, since), ["c.w-1", "c.w-2", "c.cp-1"], JSON.stringify(windows));
    assert.equal(maxConcurrent(windows, () => true), 1, JSON.stringify(windows));
    // Every Node names the configuration its spec now carries.
    const w = s.workload();
    for (const m of ["cp-1", "w-1", "w-2"]) {
      const cfg = await s.client.get<NixosConfiguration>(NIXOS_CONFIGURATIONS, `c.${m}`, s.ns);
      const node = await w.client.get<KubeObject>(NODES, m);
      assert.equal(
        node?.metadata.annotations?.[CONFIGURATION_ANNOTATION],
        cfg?.metadata.annotations?.[CONFIGURATION_ANNOTATION],
      );
    }
  },
});

Deno.test({
  name: "where Nodes say what they run, a node whose Node never names the new configuration halts the rollout",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const cp = await env.get();
    await using s = await startScenario(cp, "report", { hostBlock: 44, nodeTimeoutMs: 8_000 });
    await s.createCluster({
      gitRepo: repo("v1"),
      controlPlane: { machines: ["cp-1"] },
      dataPlane: { machines: ["w-1", "w-2"] },
    });
    await upAt(s, "v1");
    await s.client.mergePatch(MACHINES, "w-1", s.ns, {
      metadata: { annotations: { [NODE_REPORT_ANNOTATION]: "false" } },
    });
    await s.client.mergePatch(KUBERNETES_CLUSTERS, "c", s.ns, { spec: { gitRepo: repo("v2") } });
    const halted = await s.until(
      "halted at w-1",
      (c) => condition(c, "RollingOut")?.reason === "RolloutStalled",
      40_000,
    );
    assert.match(condition(halted, "RollingOut")!.message, /w-1 \(ConfigurationNotReported: Node w-1/);
    const w2 = await s.client.get<NixosConfiguration>(NIXOS_CONFIGURATIONS, "c.w-2", s.ns);
    assert.equal(w2!.spec.gitRepo, repo("v1"), "the rollout went past a node that never said it runs the new spec");
  },
});
