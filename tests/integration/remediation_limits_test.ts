/**
 * What keeps self-healing workers from replacing (real API servers, a
 * kube-apiserver per workload cluster, simulated kubelets, the simulated NIO):
 * above maxUnhealthy nothing happens and the condition says why; with no spare
 * the dead worker still leaves, the plane says it is short, and a new Machine
 * fills it.
 */
import assert from "node:assert/strict";
import { CLUSTER_LABEL, REMEDIATED_ANNOTATION } from "../../core/contract/labels.ts";
import { sharedControlPlane } from "../../testing/helpers.ts";
import { condition, startScenario } from "../../testing/scenario.ts";
import { killKubelet, machineOf, remediationEvents, settled, workerCluster } from "../remediation_kit.ts";

const env = sharedControlPlane();
const TIMEOUT_S = 4;
/** For two nodes that must be unhealthy at once. */
const BOTH_TIMEOUT_S = 12;

Deno.test({
  name: "above maxUnhealthy nothing is remediated, and the condition says why",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const cp = await env.get();
    await using s = await startScenario(cp, "heal-many", { hostBlock: 53 });
    await workerCluster(s, ["w-1", "w-2", "w-3", "w-4"], 3, {
      nodeNotReadyTimeout: `${BOTH_TIMEOUT_S}s`,
      maxUnhealthy: 1,
    });
    const died = Date.now();
    // Both die together: on a loaded machine two kills in a row can be seconds apart, and with a short timeout
    // the first would be judged (and rightly replaced) alone before the second is NotReady at all.
    await Promise.all([killKubelet(s, "w-1"), killKubelet(s, "w-2")]);
    const refused = await s.until(
      "TooManyUnhealthy",
      (c) => condition(c, "Remediating")?.reason === "TooManyUnhealthy",
      60_000,
    );
    // Node conditions carry whole seconds: the transition may be stamped up to a second before it happened.
    assert.ok(Date.now() - died >= (BOTH_TIMEOUT_S - 1) * 1000, "judged before the timeout");
    assert.match(
      condition(refused, "Remediating")!.message,
      /2 of 3 worker nodes are unhealthy, more than maxUnhealthy allows \(1: 1\).*bring them back/,
    );
    await s.settled();
    for (const m of ["w-1", "w-2", "w-3", "w-4"]) {
      assert.equal((await machineOf(s, m)).metadata.annotations?.[REMEDIATED_ANNOTATION], undefined, m);
    }
    assert.equal((await machineOf(s, "w-4")).metadata.labels?.[CLUSTER_LABEL], undefined, "the spare stays free");
    assert.ok((await remediationEvents(s)).some((e) => e.reason === "RemediationRefused"));
  },
});

Deno.test({
  name: "no spare: the dead worker still leaves, the plane is Underprovisioned and says so, a new Machine fills it",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const cp = await env.get();
    await using s = await startScenario(cp, "heal-short", { hostBlock: 54 });
    await workerCluster(s, ["w-1", "w-2"], 2, { nodeNotReadyTimeout: `${TIMEOUT_S}s` });
    await killKubelet(s, "w-1");
    const short = await s.until(
      "NoSpare, the plane Underprovisioned",
      (c) =>
        condition(c, "Remediating")?.reason === "NoSpare" &&
        condition(c, "DataPlaneReady")?.reason === "Underprovisioned",
      90_000,
    );
    assert.deepEqual(short.status?.dataPlane?.machines, ["w-2"]);
    assert.match(
      condition(short, "Remediating")!.message,
      /the worker plane is Underprovisioned \(1 of 2\): w-1 is out of service and no free Machine matches role=worker/,
    );
    assert.match(condition(short, "MachinesAvailable")!.message, /Machine w-1 is out of service/);
    assert.equal(short.status?.dataPlane?.summary, "1/2");
    // A Machine added to the pool later fills the place.
    await s.machines(["w-3"], {}, { role: "worker" });
    const full = await s.until("w-3 fills it", (c) => settled(c) && c.status?.dataPlane?.summary === "2/2", 90_000);
    assert.deepEqual(full.status?.dataPlane?.readyMachines, ["w-2", "w-3"]);
    assert.equal(condition(full, "Remediating")?.reason, "NoUnhealthyNodes");
  },
});
