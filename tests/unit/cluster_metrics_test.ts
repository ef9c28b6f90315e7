/**
 * The per-cluster gauges the alerts read (controllers/cluster/metrics.ts): one series per condition, labelled by
 * type, status and registered reason only, and the kubeconfig's expiry read from its Secret once per version.
 */
import assert from "node:assert/strict";
import { KubeconfigExpiries, observeClusters } from "../../controllers/cluster/metrics.ts";
import type { Secret } from "../../controllers/cluster/secrets.ts";
import type { KubernetesCluster } from "../../crds/kubernetescluster.ts";
import { issueKubeconfig } from "../../core/render/kubeconfig.ts";
import { encodeBase64 } from "../../lib/encoding.ts";
import { Metrics } from "../../lib/metrics.ts";
import { createCa } from "../../lib/pki.ts";

const T = "2026-01-01T00:00:00Z";

function cluster(name: string, conditions: { type: string; status: "True" | "False" | "Unknown"; reason: string }[]) {
  return {
    apiVersion: "nico.homystack.com/v1alpha1",
    kind: "KubernetesCluster",
    metadata: { name, namespace: "infra", uid: `uid-${name}` },
    spec: {},
    status: {
      phase: "Ready",
      controlPlane: { ready: 2, total: 3 },
      conditions: conditions.map((c) => ({ ...c, message: "m", lastTransitionTime: T })),
    },
  } as unknown as KubernetesCluster;
}

Deno.test("nico_cluster_condition: one series per registered condition, reasons from the registry only", async () => {
  const metrics = new Metrics();
  observeClusters(metrics, [
    cluster("prod", [
      { type: "Ready", status: "False", reason: "WaitingForWorkers" },
      { type: "Stalled", status: "False", reason: "NotStalled" },
      { type: "Remediating", status: "False", reason: "QuorumWouldBeLost" },
      // What an older NICO wrote: a reason the registry does not list, and a type NICO no longer writes.
      { type: "Reconciling", status: "True", reason: "SomethingOld" },
      { type: "Applied", status: "True", reason: "Success" },
    ]),
  ]);
  const lines = (await metrics.text()).split("\n").filter((l) => l.startsWith("nico_cluster_condition{"));
  assert.deepEqual(
    lines.sort(),
    [
      'nico_cluster_condition{namespace="infra",cluster="prod",type="Ready",status="False",reason="WaitingForWorkers"} 1',
      'nico_cluster_condition{namespace="infra",cluster="prod",type="Reconciling",status="True",reason="Unregistered"} 1',
      'nico_cluster_condition{namespace="infra",cluster="prod",type="Remediating",status="False",reason="QuorumWouldBeLost"} 1',
      'nico_cluster_condition{namespace="infra",cluster="prod",type="Stalled",status="False",reason="NotStalled"} 1',
    ].sort(),
  );
  // A cluster gone, or a condition changed: its old series go with the next scrape.
  observeClusters(metrics, [cluster("prod", [{ type: "Ready", status: "True", reason: "ClusterReady" }])]);
  const after = (await metrics.text()).split("\n").filter((l) => l.startsWith("nico_cluster_condition{"));
  assert.deepEqual(after, [
    'nico_cluster_condition{namespace="infra",cluster="prod",type="Ready",status="True",reason="ClusterReady"} 1',
  ]);
  assert.match(
    await metrics.text(),
    /nico_nodes\{namespace="infra",cluster="prod",plane="controlPlane",state="not_ready"\} 1/,
  );
});

Deno.test("nico_cluster_kubeconfig_expiry_timestamp_seconds: the client certificate's notAfter, read once per version", async () => {
  const ca = await createCa({ commonName: "prod-ca" });
  const now = new Date("2026-01-01T00:00:00Z");
  const text = await issueKubeconfig("prod", "https://127.0.0.1:6443", ca, now);
  let reads = 0;
  const secret: Secret = {
    metadata: { name: "prod-kubeconfig", namespace: "infra", uid: "s1", resourceVersion: "7" },
    get data() {
      reads++;
      return { value: encodeBase64(text) };
    },
  } as Secret;
  const expiries = new KubeconfigExpiries((ns, name) =>
    ns === "infra" && name === "prod-kubeconfig" ? secret : undefined
  );
  const metrics = new Metrics();
  const c = cluster("prod", []);
  observeClusters(metrics, [c, cluster("staging", [])], (x) => expiries.of(x));
  observeClusters(metrics, [c, cluster("staging", [])], (x) => expiries.of(x));
  const want = Math.floor(now.getTime() / 1000) + 365 * 86400;
  const series = (await metrics.text()).split("\n").filter((l) => l.startsWith("nico_cluster_kubeconfig_expiry"));
  assert.deepEqual(series, [
    `nico_cluster_kubeconfig_expiry_timestamp_seconds{namespace="infra",cluster="prod"} ${want}`,
  ]);
  assert.equal(reads, 1, "the certificate is parsed once per resourceVersion");
  expiries.prune();
  expiries.prune(); // prod was not asked about since: forgotten, read again when asked
  expiries.of(c);
  assert.equal(reads, 2);
});

Deno.test("nico_process_memory_bytes: the process's memory by kind, read at each scrape", async () => {
  const metrics = new Metrics();
  const value = (text: string, kind: string) =>
    Number(text.match(new RegExp(`^nico_process_memory_bytes\\{kind="${kind}"\\} (\\S+)$`, "m"))?.[1]);
  const text = await metrics.text();
  for (const kind of ["rss", "heap_total", "heap_used", "external"]) {
    assert.ok(value(text, kind) > 0, `${kind}: ${value(text, kind)}`);
  }
  assert.ok(value(text, "heap_used") <= value(text, "heap_total"));
  assert.ok(value(text, "heap_total") < value(text, "rss"));
  // Read again at the next scrape, not fixed at the first one.
  const hold = new Array(1_000_000).fill(0).map((_, i) => ({ i }));
  const after = await metrics.text();
  assert.ok(value(after, "heap_used") > value(text, "heap_used"), "a bigger heap shows at the next scrape");
  assert.equal(hold.length, 1_000_000);
});

Deno.test("nico_etcd_backup_*: every gauge the backup alert and panel read, for a cluster keeping backups only", async () => {
  const metrics = new Metrics();
  const kept = cluster("prod", []);
  kept.spec = { etcd: { backup: { schedule: "0 * * * *" } } } as never;
  (kept.status as Record<string, unknown>).etcd = {
    backups: {
      since: "2026-01-01T00:00:00Z",
      failures: 2,
      last: { key: "k", time: "2026-01-01T01:00:00Z", size: 4096, seconds: 1.5 },
    },
  };
  observeClusters(metrics, [kept, cluster("staging", [])]);
  const text = await metrics.text();
  const value = (name: string) =>
    text.split("\n").filter((l) => l.startsWith(`${name}{`)).map((
      l,
    ) => [l.slice(name.length).split("}")[0], Number(l.split(" ").pop())]);
  const at = Date.parse("2026-01-01T01:00:00Z") / 1000;
  const series = `{namespace="infra",cluster="prod"`;
  assert.deepEqual(value("nico_etcd_backup_last_success_timestamp_seconds"), [[series, at]]);
  assert.deepEqual(value("nico_etcd_backup_since_timestamp_seconds"), [[series, at - 3600]]);
  assert.deepEqual(value("nico_etcd_backup_schedule_interval_seconds"), [[series, 3600]]);
  assert.deepEqual(value("nico_etcd_backup_last_duration_seconds"), [[series, 1.5]]);
  assert.deepEqual(value("nico_etcd_backup_last_size_bytes"), [[series, 4096]]);
  assert.deepEqual(value("nico_etcd_backup_failures"), [[series, 2]]);
  observeClusters(metrics, [cluster("staging", [])]);
  assert.ok(!/^nico_etcd_backup_\w+\{/m.test(await metrics.text()), "a cluster gone takes its backup series along");
});
