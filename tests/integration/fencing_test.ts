/**
 * Fencing on a real API server with its audit log on: two NICO processes,
 * each with its own user; the leader is paused (SIGSTOP) while clusters
 * change, the standby takes over, the old leader is resumed (SIGCONT). The
 * audit log shows every request of the old leader after the resume: not one
 * may be a write (status patch, Event, Machine claim, Lease update).
 */
import { startReplica } from "../../testing/nico_process.ts";
import assert from "node:assert/strict";
import { auditFlags, auditPolicy, isWrite, readAudit, tally } from "../../bench/scale/audit.ts";
import { KUBERNETES_CLUSTERS, type KubernetesCluster } from "../../crds/kubernetescluster.ts";
import type { Lease } from "../../lib/leader.ts";
import { LEASES } from "../../lib/kube/resources.ts";
import { startControlPlane } from "../../testing/envtest/controlplane.ts";
import { eventually } from "../../testing/helpers.ts";
import { createMachines, machinesDiscovered } from "../../testing/nico.ts";
import { world } from "../../testing/world.ts";

const USERS = { a: "nico-a", b: "nico-b" } as const;

/** How the process ended, or undefined if it still runs after `ms`. */
async function exitWithin<T>(exited: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<undefined>((r) => timer = setTimeout(() => r(undefined), ms));
  return await Promise.race([exited, late]).finally(() => clearTimeout(timer));
}

/** The paths of writes the fence let through before `before` (ms since the epoch), from a JSON debug log. */
function letThrough(log: string, before: number): string[] {
  return log.split("\n").filter((l) => l.includes('"write let through the fence"')).map((l) =>
    JSON.parse(l) as { ts: string; path: string }
  ).filter((e) => Date.parse(e.ts) < before).map((e) => e.path);
}

/**
 * The leader election's own renewal, caught by the pause between its read of the Lease and its write: sent on resume
 * with the old resourceVersion, the API server refuses it (409) and nothing is written. A renewal that succeeded after
 * the resume would take the lease back: that stays a breach.
 */
function staleRenewal(r: { verb: string; resource: string; code: number }): boolean {
  return r.resource === "leases" && r.verb === "update" && r.code === 409;
}

Deno.test("a leader paused past its renew deadline writes nothing after it resumes", async () => {
  const tmp = await Deno.makeTempDir({ prefix: "nico-fencing-" });
  await using removeTmp = new AsyncDisposableStack(); // last: the control plane's audit log is in there
  removeTmp.defer(() => Deno.remove(tmp, { recursive: true }).catch(() => {}));
  const policy = `${tmp}/audit-policy.yaml`;
  const auditLog = `${tmp}/audit.log`;
  await Deno.writeTextFile(policy, auditPolicy(Object.values(USERS)));
  await using cp = await startControlPlane({ apiserverArgs: auditFlags(policy, auditLog) });
  await using w = await world("fencing", { cp, nio: { applyDelayMs: 100 }, nico: false });
  const { ns } = w;
  const kubeconfigs = {
    a: await cp.userKubeconfig(USERS.a, ["system:masters"]),
    b: await cp.userKubeconfig(USERS.b, ["system:masters"]),
  };
  const logs = { a: `${tmp}/nico-a.log`, b: `${tmp}/nico-b.log` };
  const replicas = {
    a: startReplica(kubeconfigs.a, USERS.a, logs.a, ["--log-level=debug"]),
    b: startReplica(kubeconfigs.b, USERS.b, logs.b, ["--log-level=debug"]),
  };
  w.defer(async () => {
    await replicas.a.stop();
    await replicas.b.stop();
  });
  const ready = (name: string) => async () =>
    (await cp.client.get<KubernetesCluster>(KUBERNETES_CLUSTERS, name, ns))?.status?.phase === "Ready";
  const holder = async () => (await cp.client.get<Lease>(LEASES, "nico-leader", "kube-system"))?.spec?.holderIdentity;
  const first = await eventually("a leader", async () => {
    const h = await holder();
    return h === USERS.a || h === USERS.b ? h : undefined;
  }, 60_000);
  const [old, standby] = first === USERS.a ? ["a", "b"] as const : ["b", "a"] as const;
  await createMachines(cp.client, ns, ["cp-1", "cp-2", "w-1", "w-2"]);
  await machinesDiscovered(cp.client, ns, ["cp-1", "cp-2", "w-1", "w-2"]);
  await cp.client.create(KUBERNETES_CLUSTERS, {
    metadata: { name: "one", namespace: ns },
    spec: { controlPlane: { machines: ["cp-1"] }, dataPlane: { machines: ["w-1"] } },
  } as KubernetesCluster);
  await eventually("cluster one Ready", ready("one"), 30_000);

  // Pause the leader, then give it work it will see (from its open watches) when it resumes.
  const stoppedAt = Date.now();
  await replicas[old].kill("SIGSTOP");
  await cp.client.create(KUBERNETES_CLUSTERS, {
    metadata: { name: "two", namespace: ns },
    spec: { controlPlane: { machines: ["cp-2"] }, dataPlane: { machines: ["w-2"] } },
  } as KubernetesCluster);
  await cp.client.mergePatch(KUBERNETES_CLUSTERS, "one", ns, { spec: { rollout: { maxUnavailable: 2 } } });
  await eventually("the standby leads", async () => (await holder()) === USERS[standby], 40_000, 200);
  await eventually("cluster two Ready (by the standby)", ready("two"), 30_000);

  const resumedAt = Date.now();
  await replicas[old].kill("SIGCONT");
  const status = await exitWithin(replicas[old].exited, 30_000);
  const exitedAfter = (Date.now() - resumedAt) / 1000;
  assert.ok(status, `the old leader did not exit within 30 s of its resume:\n${await replicas[old].tail(20)}`);
  assert.equal(status.code, 1, "a leader that lost its lease exits with 1");

  const audit = await readAudit(auditLog);
  const before = audit.filter((r) => r.user === USERS[old] && r.at < resumedAt);
  const after = audit.filter((r) => r.user === USERS[old] && r.at >= resumedAt);
  const refused = (await Deno.readTextFile(logs[old])).split("\n")
    .filter((l) => l.includes("may no longer be the leader")).length;
  console.log(
    `old leader (${USERS[old]}): ${tally(before).writes} writes before the pause; after the resume ` +
      `${after.length} requests, ${after.filter(isWrite).length} writes ` +
      `${JSON.stringify(tally(after).byVerbResource)}; ${refused} log lines of writes refused by the fence; ` +
      `exited ${exitedAfter.toFixed(1)} s after SIGCONT`,
  );
  assert.ok(before.some(isWrite), "the audit log attributes the leader's writes to its user (sanity check)");
  // A write the fence let through just before the stop leaves the process only when it resumes; the old leader's
  // log says when it was let through. Any other write after the resume is a breach.
  const log = await Deno.readTextFile(logs[old]);
  const inFlight = letThrough(log, stoppedAt);
  const late = after.filter(isWrite).filter((r) => !inFlight.some((path) => r.uri.split("?")[0] === path))
    .filter((r) => !staleRenewal(r));
  assert.deepEqual(late.map((r) => `${r.verb} ${r.resource} ${r.code}`), []);
  assert.match(log, /lost the lease \(renew deadline passed\)/);
});
