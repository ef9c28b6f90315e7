/**
 * The restore drill through the workload API's own objects (issue 39, item 4): the simulated workload API server
 * keeps its data in the control-plane hosts' stacked etcd members (`stackedEtcd`, testing/workload_etcd.ts), as k3s
 * and kubeadm do, so a restore brings real Kubernetes objects back. ConfigMaps are written through the workload API,
 * a backup is taken (`nico backup`'s request), more ConfigMaps are written; an informer opened on them before the
 * disaster keeps watching through the workload API. The hosts' etcd dies with its data, and the restore of the
 * latest backup is asked for at once (before NICO looked at etcd again: it is judged on a look taken after it). The
 * ConfigMaps from before the backup are back and the later ones are gone; the informer listed again (the restored
 * etcd's revision is bumped and its history marked compacted, so its watch ends 410 Gone; or its watch failed while
 * etcd was away) and never saw a resourceVersion go backwards; NICO says Ready; `kubectl get nodes` through NICO's
 * kubeconfig answers. Once with one control-plane node, once with three (all lost; the bootstrap node restores, the
 * other two rejoin). The API server is not restarted: it reconnects to the restored members, and its watch cache
 * relists on etcd's `compacted`.
 */
import assert from "node:assert/strict";
import { kubeconfigSecret } from "../../core/contract/names.ts";
import type { KubeClient, KubeObject } from "../../lib/kube/client.ts";
import { NAMESPACES, resource, SECRETS } from "../../lib/kube/resources.ts";
import { Informer } from "../../lib/runtime/informer.ts";
import { silentLogger } from "../../lib/runtime/log.ts";
import { eventually, sharedControlPlane } from "../../testing/helpers.ts";
import { type Scenario, startScenario } from "../../testing/scenario.ts";
import { backedUpCluster, backupSpec, requestedBackup, storeFor } from "../backup_kit.ts";
import { askRestore, restoreEndedAs } from "../restore_scenario_kit.ts";
import { etcdSettled } from "../etcd_kit.ts";

const env = sharedControlPlane();
const CONFIGMAPS = resource("", "v1", "ConfigMap", "configmaps");
const NS = "drill";

/** Creates ConfigMaps `<prefix>-0` … in the workload's drill namespace. */
async function write(wl: KubeClient, prefix: string, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    await wl.create(CONFIGMAPS, { metadata: { name: `${prefix}-${i}`, namespace: NS }, data: { written: prefix } });
  }
}

/** The names of the drill's ConfigMaps, sorted. */
const names = (items: KubeObject[]) => items.map((o) => o.metadata.name).sort();

/** What an informer saw: at each event, its type, the object, and the informer's resourceVersion then. */
function witness(informer: Informer) {
  const seen: { type: string; name: string; rv: number }[] = [];
  informer.onEvent((type, obj) => seen.push({ type, name: obj.metadata.name, rv: Number(informer.resourceVersion) }));
  return seen;
}

/** `kubectl get nodes` with NICO's kubeconfig Secret: the Nodes' names, once it answers with `count` of them. */
async function kubectlNodes(s: Scenario, count: number): Promise<string[]> {
  const secret = await s.client.get<KubeObject & { data: { value: string } }>(SECRETS, kubeconfigSecret("c"), s.ns);
  const path = await Deno.makeTempFile({ suffix: ".kubeconfig" });
  s.defer(() => Deno.remove(path));
  await Deno.writeTextFile(path, atob(secret!.data.value));
  const out = await eventually(`kubectl get nodes answers ${count}`, async () => {
    const r = await s.cp.kubectl(["get", "nodes", "--no-headers"], { kubeconfig: path });
    return r.code === 0 && r.stdout.trim().split("\n").length === count ? r.stdout : undefined;
  }, 60_000);
  return out.trim().split("\n").map((l) => l.split(/\s+/)[0]!).sort();
}

/**
 * The drill on cluster c, Ready with etcd on `controlPlane` and one worker: ConfigMaps before and after a backup,
 * an informer watching, every control-plane host's etcd killed with its data, the latest backup restored.
 */
async function drill(s: Scenario, controlPlane: string[]): Promise<void> {
  const wl = s.workload().client;
  await wl.create(NAMESPACES, { metadata: { name: NS } });
  const informer = new Informer(wl, CONFIGMAPS, { namespace: NS, logger: silentLogger, resyncMs: 0 });
  const seen = witness(informer);
  informer.start();
  s.defer(() => informer.stop());
  await informer.synced();

  await write(wl, "before", 5);
  const backup = await requestedBackup(s, "objects");
  await write(wl, "after", 5);
  await eventually("the informer sees all ten", () => informer.list(NS).length === 10, 30_000);
  const lastSeen = Number(informer.resourceVersion);
  assert.ok(lastSeen > Number(backup.revision), `the later writes (${lastSeen}) come after the backup's revision`);
  const before = informer.stats();

  // The disaster: every control-plane host's etcd dies with its data; the workload API server has no store left.
  // The request comes at once, before NICO looked at etcd again: its last look (healthy) is older than the request,
  // and a request is judged on a look taken after it, so it is not refused for a healthy quorum.
  for (const m of controlPlane) await s.workloads.etcd.kill(s.ns, "c", m, true);
  await askRestore(s, { requestId: "objects", backup: "latest" });
  const restored = await restoreEndedAs(s, "objects", "Succeeded", 300_000);
  assert.equal(restored.status!.restore!.backup, backup.key, "latest is the backup just taken");
  const n = controlPlane.length;
  await s.until(`Ready again, etcd of ${n} healthy`, etcdSettled(n), 300_000);

  // The workload API answers with the objects of the backup: the ones written before it, none written after.
  const expected = [0, 1, 2, 3, 4].map((i) => `before-${i}`);
  const listed = await eventually("the workload API lists the backup's ConfigMaps", async () => {
    const l = await wl.list(CONFIGMAPS, { namespace: NS });
    if (names(l.items).join() !== expected.join()) throw new Error(`it lists ${names(l.items).join(", ")}`);
    return l;
  }, 60_000);
  assert.ok(Number(listed.resourceVersion) > lastSeen, "the list's revision is past all seen before");

  // The informer opened before the disaster relisted on its own and holds exactly the backup's ConfigMaps.
  await eventually("the informer holds the backup's ConfigMaps", () => {
    const held = names(informer.list(NS));
    if (held.join() !== expected.join()) throw new Error(`it holds ${held.join(", ")}`);
    return true;
  }, 60_000);
  // It listed again: on 410 Gone (the restored history is marked compacted), or after its watch failed while etcd was
  // away (then the list came from the restored data). Either way it holds the backup's objects (above), not later ones.
  const after = informer.stats();
  assert.ok(after.gone > before.gone || after.lists > before.lists, `it listed again: ${JSON.stringify(after)}`);
  assert.ok(Number(informer.resourceVersion) > lastSeen, "its resourceVersion went forward");
  const deleted = seen.filter((e) => e.type === "delete").map((e) => e.name).sort();
  assert.deepEqual(deleted, [0, 1, 2, 3, 4].map((i) => `after-${i}`), "the later ones left the informer as deletes");
  const backwards = seen.filter((e, i) => i > 0 && e.rv < seen[i - 1]!.rv);
  assert.deepEqual(backwards, [], `no resourceVersion went backwards: ${JSON.stringify(seen)}`);

  assert.deepEqual(await kubectlNodes(s, n + 1), [...controlPlane, "w-1"]);
}

Deno.test({
  name: "restore drill on the workload API's objects, 1 + 1: the backup's ConfigMaps are back, an informer relists",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const cp = await env.get();
    await using s = await startScenario(cp, "restore-objects", { hostBlock: 207, stackedEtcd: true });
    await backedUpCluster(s, 207, ["w-1"]);
    await drill(s, ["cp-1"]);
  },
});

Deno.test({
  name: "restore drill on the workload API's objects, 3 + 1: the bootstrap node restores, the others rejoin",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const cp = await env.get();
    await using s = await startScenario(cp, "restore-objects-three", { hostBlock: 208, stackedEtcd: true });
    const store = await storeFor(s, "127.0.208.250");
    const controlPlane = ["cp-1", "cp-2", "cp-3"];
    await s.createCluster({
      gitRepo: "https://git.example.test/flake.git",
      controlPlane: { machines: controlPlane },
      dataPlane: { machines: ["w-1"] },
      etcd: { backup: backupSpec(store) },
    });
    await s.until("Ready, etcd of 3 healthy", etcdSettled(3), 240_000);
    await drill(s, controlPlane);
  },
});
