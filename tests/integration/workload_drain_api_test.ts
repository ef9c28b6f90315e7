/**
 * The drain against a real API server on loopback that runs
 * kube-controller-manager's disruption controller, so PodDisruptionBudgets are
 * enforced by the Eviction API as in a real cluster: cordon, a budget that
 * refuses (429) and then allows, DaemonSet pods skipped, the timeout,
 * uncordon and Node deletion.
 */
import assert from "node:assert/strict";
import { WorkloadCache } from "../../controllers/cluster/workload/cache.ts";
import { deleteNode, drainNode, uncordon } from "../../controllers/cluster/workload/drain.ts";
import { issueKubeconfig } from "../../core/render/kubeconfig.ts";
import type { DrainSettings, KubeNode, KubePod } from "../../core/nodes/workload.ts";
import type { KubeClient } from "../../lib/kube/client.ts";
import { NAMESPACES, NODES, PDBS, PODS } from "../../lib/kube/resources.ts";
import { silentLogger } from "../../lib/runtime/log.ts";
import { createCa } from "../../lib/pki.ts";
import { DRAIN_STARTED_ANNOTATION } from "../../core/contract/labels.ts";
import { startControlPlane } from "../../testing/envtest/controlplane.ts";
import { eventually } from "../../testing/helpers.ts";
import { simulateKubelets } from "../../testing/kubelet.ts";

async function readyNode(client: KubeClient, name: string) {
  await client.create(NODES, { metadata: { name } });
  await client.mergePatch(NODES, name, undefined, {
    status: { conditions: [{ type: "Ready", status: "True", reason: "KubeletReady", message: "test" }] },
  }, "status");
}

const NS = "apps";
const SETTINGS: DrainSettings = { enabled: true, timeoutMs: 60_000, onTimeout: "Halt", deleteEmptyDirData: false };

/** A pod in `apps` on `node`: app `web` for names starting so, `agent` otherwise. */
const pod = (client: KubeClient, name: string, node: string, extra: Partial<KubePod["metadata"]> = {}) =>
  client.create<KubePod>(PODS, {
    metadata: { name, namespace: NS, labels: { app: name.startsWith("web") ? "web" : "agent" }, ...extra },
    spec: { nodeName: node, containers: [{ name: "c", image: "registry.invalid/none" }] },
  } as KubePod);

/**
 * An API server with the disruption controller, kubelets for w-1 and w-2, a budget (minAvailable 1) over web-1
 * on w-1 beside a DaemonSet pod, and a connection to it; `await using` stops them.
 */
async function drainWorld() {
  const stack = new AsyncDisposableStack();
  try {
    const ca = await createCa({ commonName: "wl-ca" });
    const cp = await startControlPlane({ ca, host: "127.0.0.62", crds: [], controllers: ["disruption"] });
    stack.defer(() => cp.stop());
    const kubelet = simulateKubelets(cp.client, (n) => n.startsWith("w-"));
    stack.defer(() => kubelet.stop());
    const cache = new WorkloadCache({
      onChange: () => {},
      log: silentLogger,
      policy: "loopback",
      probeIntervalMs: 250,
    });
    stack.defer(() => cache.closeAll());
    const client = cp.client;
    await readyNode(client, "w-1");
    await readyNode(client, "w-2");
    await client.create(NAMESPACES, { metadata: { name: NS } });
    await client.create(PDBS, {
      metadata: { name: "web", namespace: NS },
      spec: { minAvailable: 1, selector: { matchLabels: { app: "web" } } },
    });
    await pod(client, "web-1", "w-1");
    await pod(client, "agent-w1", "w-1", {
      ownerReferences: [{ apiVersion: "apps/v1", kind: "DaemonSet", name: "agent", uid: "ds-uid", controller: true }],
    });
    await eventually("the disruption controller to see one healthy pod", async () => {
      const pdb = await client.get<{ metadata: { name: string }; status?: { currentHealthy?: number } }>(
        PDBS,
        "web",
        NS,
      );
      return pdb?.status?.currentHealthy === 1;
    }, 30_000);
    const kc = await issueKubeconfig("d", cp.server, ca);
    await eventually("the connection", () => cache.view("t/d", kc).nodes?.has("w-1"));
    const conn = cache.connection("t/d")!;
    const moved = stack.move();
    return { client, conn, [Symbol.asyncDispose]: () => moved.disposeAsync() };
  } catch (err) {
    await stack.disposeAsync();
    throw err;
  }
}

type Conn = Awaited<ReturnType<typeof drainWorld>>["conn"];

/** The first pass cordons w-1; the budget refuses web-1's eviction (DaemonSet pods are left); a late drain times out. */
async function budgetRefuses(client: KubeClient, conn: Conn): Promise<void> {
  const first = await drainNode(conn, "w-1", SETTINGS, new Date());
  assert.equal(first.cordoned, true, "the first pass cordons, and says so");
  const blocked = await eventually("the eviction to be refused by the budget", async () => {
    const p = await drainNode(conn, "w-1", SETTINGS, new Date());
    return /eviction refused for apps\/web-1 \(PodDisruptionBudget/.test(p.message) ? p : undefined;
  });
  assert.equal(blocked.state, "Draining");
  await eventually("the cache to see the cordon", () => conn.node("w-1")?.spec?.unschedulable === true);
  const again = await drainNode(conn, "w-1", SETTINGS, new Date());
  assert.equal(again.cordoned, undefined, "a cordoned Node is not cordoned again");
  assert.match(blocked.message, /\(PodDisruptionBudget apps\/web: needs 1 healthy pods? and has 1/, "names the budget");
  assert.doesNotMatch(blocked.message, /agent-w1/, "DaemonSet pods are not evicted");
  const cordoned = await client.get<KubeNode>(NODES, "w-1");
  assert.equal(cordoned?.spec?.unschedulable, true);
  assert.ok(cordoned?.metadata.annotations?.[DRAIN_STARTED_ANNOTATION]);
  assert.ok(await client.get(PODS, "web-1", NS), "the budget kept web-1");

  const late = await drainNode(conn, "w-1", { ...SETTINGS, timeoutMs: 1 }, new Date(Date.now() + 5_000));
  assert.equal(late.state, "TimedOut");
  assert.match(late.message, /took longer than 1ms \(spec.rollout.drain.timeout\)/);
}

/** The budget allows it once another healthy pod exists: w-1 is drained, watching only its own Pods. */
async function budgetAllows(client: KubeClient, conn: Conn): Promise<void> {
  await pod(client, "web-2", "w-2");
  const done = await eventually("the drain to finish", async () => {
    const p = await drainNode(conn, "w-1", SETTINGS, new Date());
    return p.state === "Drained" ? p : undefined;
  }, 30_000);
  assert.match(done.message, /drained w-1/);
  assert.deepEqual(conn.watchingPodsOf, ["w-1"], "only the drained node's Pods are watched");
  assert.deepEqual(conn.podsOn("w-2"), undefined, "another node's Pods need their own (new) informer");
  assert.equal(await client.get(PODS, "web-1", NS), undefined, "web-1 was evicted");
  assert.ok(await client.get(PODS, "agent-w1", NS), "the DaemonSet pod stays");
}

/** Uncordon undoes NICO's cordon only; a Node is deleted once. */
async function uncordonAndDelete(client: KubeClient, conn: Conn): Promise<void> {
  await eventually("the cache to see the cordon", () => conn.node("w-1")?.spec?.unschedulable === true);
  assert.equal(await uncordon(conn, "w-1"), true);
  const back = await client.get<KubeNode>(NODES, "w-1");
  assert.notEqual(back?.spec?.unschedulable, true);
  assert.equal(back?.metadata.annotations?.[DRAIN_STARTED_ANNOTATION], undefined);
  await eventually("the cache to see the uncordon", () => conn.node("w-1")?.spec?.unschedulable !== true);
  assert.equal(await uncordon(conn, "w-1"), false, "a Node NICO did not cordon is left alone");

  assert.equal(await deleteNode(conn, "w-2"), true);
  assert.equal(await client.get(NODES, "w-2"), undefined);
  assert.equal(await deleteNode(conn, "w-2"), false);
}

Deno.test({
  name:
    "drain: cordon, PodDisruptionBudget honoured (429 waits), DaemonSet pods skipped, timeout, uncordon, Node deletion",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await using w = await drainWorld();
    await budgetRefuses(w.client, w.conn);
    await budgetAllows(w.client, w.conn);
    await uncordonAndDelete(w.client, w.conn);
  },
});
