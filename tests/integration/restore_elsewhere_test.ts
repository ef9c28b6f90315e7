/**
 * A restore onto other machines (issue 39, item 2): a new KubernetesCluster created from another cluster's backup
 * (`spec.etcd.restore.from`), on a Machine whose address differs from the old one. NICO finds the backup in the
 * other cluster's store, presigns it, gives the new cluster's bootstrap node the restore part (no quorum check and
 * no safety snapshot: nothing was ever brought up), and the simulated host restores it with the real `etcdutl` for
 * its own member list. The new cluster's etcd then holds the old cluster's keys, and the cluster ends Ready. A
 * request naming a cluster that does not exist is refused with the field and the fix.
 */
import assert from "node:assert/strict";
import { KUBERNETES_CLUSTERS, type KubernetesCluster } from "../../crds/kubernetescluster.ts";
import { NIXOS_CONFIGURATIONS, type NixosConfiguration } from "../../core/contract/nio.ts";
import { EtcdClient } from "../../lib/etcd/client.ts";
import { issueCert } from "../../lib/pki.ts";
import { eventually, sharedControlPlane } from "../../testing/helpers.ts";
import { condition, type Scenario, startScenario } from "../../testing/scenario.ts";
import { runNicoCli } from "../../testing/cli.ts";
import { backedUpCluster, requestedBackup } from "../backup_kit.ts";
import { endpoints, etcdSettled } from "../etcd_kit.ts";

const env = sharedControlPlane();
const BLOCK = 200;

/** Cluster `name`'s keys under /drill/ as its etcd member at `endpoint` answers (a certificate of its hosts' CA). */
async function drillKeys(s: Scenario, name: string, endpoint: string): Promise<string[]> {
  const ca = s.workloads.etcd.ca(s.ns, name);
  if (!ca) throw new Error(`the simulated hosts run no etcd for cluster ${name}`);
  const cert = await issueCert(ca, { commonName: "test", usage: "client", days: 1 });
  const client = new EtcdClient({ caPem: ca.certPem, certPem: cert.certPem, keyPem: cert.keyPem, timeoutMs: 10_000 });
  try {
    const r = await client.call(endpoint, "kv/range", { key: btoa("/drill/"), range_end: btoa("/drill0") }) as {
      kvs?: { key: string }[];
    };
    return (r.kvs ?? []).map((kv) => atob(kv.key)).sort();
  } finally {
    client.close();
  }
}

/** Cluster `name` once `ok` holds (fails at once on a restore that ended otherwise than Succeeded). */
function clusterWhen(s: Scenario, name: string, what: string, ok: (c: KubernetesCluster) => boolean, ms = 240_000) {
  let last: KubernetesCluster | undefined;
  return eventually(what, async () => {
    last = await s.client.get<KubernetesCluster>(KUBERNETES_CLUSTERS, name, s.ns);
    const r = last?.status?.restore;
    if (r && ["Failed", "Refused"].includes(r.step)) throw new Error(`restore ${r.step} (${r.reason}): ${r.message}`);
    return last !== undefined && ok(last);
  }, ms).then(() => last!);
}

Deno.test({
  name: "restore onto other machines: a new cluster from another cluster's backup holds its keys and ends Ready",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const cp = await env.get();
    await using s = await startScenario(cp, "restore-elsewhere", { hostBlock: BLOCK });
    await backedUpCluster(s, BLOCK);
    const [old, moved] = endpoints(BLOCK, 2);
    const ca = s.workloads.etcd.ca(s.ns, "c")!;
    const cert = await issueCert(ca, { commonName: "test", usage: "client", days: 1 });
    const client = new EtcdClient({ caPem: ca.certPem, certPem: cert.certPem, keyPem: cert.keyPem, timeoutMs: 10_000 });
    s.defer(() => client.close());
    await client.call(old!, "kv/put", { key: btoa("/drill/kept"), value: btoa("from cluster c") });
    const backup = await requestedBackup(s, "for-d");

    // The new cluster, on a Machine of its own (127.0.200.3 where c's is .2).
    await s.machines(["d-cp-1"]);
    await s.discovered(["d-cp-1"]);
    const spec = (from: string) => ({
      gitRepo: "https://git.example.test/flake.git",
      controlPlane: { machines: ["d-cp-1"] },
      dataPlane: { machines: [] },
      etcd: { restore: { requestId: "move-1", backup: "latest", from } },
    });
    await s.client.create(KUBERNETES_CLUSTERS, { metadata: { name: "e", namespace: s.ns }, spec: spec("nope") });
    const refused = await eventually("e's request refused", async () => {
      const e = await s.client.get<KubernetesCluster>(KUBERNETES_CLUSTERS, "e", s.ns);
      return e?.status?.restore?.step === "Refused" ? e : undefined;
    }, 60_000);
    assert.equal(refused.status!.restore!.reason, "SourceRefused");
    assert.match(refused.status!.restore!.message, /spec\.etcd\.restore\.from: no KubernetesCluster nope/);
    // Not brought up empty instead: the status says why, and no configuration was made.
    await eventually("e says why it waits", async () => {
      const e = await s.client.get<KubernetesCluster>(KUBERNETES_CLUSTERS, "e", s.ns);
      return (e?.status?.conditions ?? []).some((c) => /nothing is brought up empty/.test(c.message ?? ""));
    }, 60_000);
    const configs = (await s.client.list<NixosConfiguration>(NIXOS_CONFIGURATIONS, { namespace: s.ns })).items;
    assert.deepEqual(configs.map((c) => c.spec.machineRef.name), ["cp-1"], "only c's configuration");
    await s.client.delete(KUBERNETES_CLUSTERS, "e", s.ns);
    await eventually("e gone", async () => !(await s.client.get(KUBERNETES_CLUSTERS, "e", s.ns)), 60_000);

    await s.client.create(KUBERNETES_CLUSTERS, { metadata: { name: "d", namespace: s.ns }, spec: spec("c") });
    const done = await clusterWhen(s, "d", "d's restore Succeeded", (d) => d.status?.restore?.step === "Succeeded");
    const r = done.status!.restore!;
    assert.equal(r.backup, backup.key, "latest of cluster c");
    assert.equal(r.from, "c");
    assert.equal(r.safetySnapshot, undefined, "a new cluster: nothing to keep");
    assert.deepEqual(r.nodes, [{ name: "d-cp-1", state: "Restored" }]);
    assert.deepEqual(await drillKeys(s, "d", moved!), ["/drill/kept"], "c's data, on d's own member");
    const ready = await clusterWhen(s, "d", "d Ready, etcd of 1 healthy", etcdSettled(1));
    assert.deepEqual(ready.status!.etcd!.members.map((m) => m.name), ["d-cp-1"], "d's member list, not c's");
    assert.equal(condition(ready, "Restoring")?.reason, "Restored");

    // nico restore --source: d rewound in place from c's store (its newest backup), on purpose.
    const args = ["restore", "d", "--from", "latest", "--source", "c", "--yes", "--rewind-healthy"];
    const cli = await runNicoCli([...args, `--kubeconfig=${cp.kubeconfigPath}`, "-n", s.ns]);
    assert.equal(cli.code, 0, cli.stderr);
    assert.equal(cli.stdout.split("\n")[0], `restore etcd of cluster ${s.ns}/d from ${backup.key}`);
    const asked = (await s.client.get<KubernetesCluster>(KUBERNETES_CLUSTERS, "d", s.ns))!.spec.etcd!.restore!;
    assert.deepEqual([asked.from, asked.backup, asked.rewindHealthy], ["c", backup.key, true]);
    const again = await clusterWhen(
      s,
      "d",
      "d rewound",
      (d) => d.status?.restore?.requestId === asked.requestId && d.status.restore.step === "Succeeded",
    );
    assert.ok(again.status!.restore!.safetySnapshot, "d answered: a safety snapshot first, into c's store");
  },
});
