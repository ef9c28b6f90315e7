/**
 * What a running NICO serves on /metrics, against what the alerts and the dashboard read (deploy/monitoring/):
 * a `nico run` process with leader election and its webhook (certificates from files, as with cert-manager),
 * a cluster brought to Ready by the simulated NIO and one admission review, then a scrape. Every metric an alert
 * or a query reads is served with a sample (the backup gauges, declared: this world keeps no backups), the per-cluster gauges carry the cluster's Ready condition and its
 * kubeconfig's expiry, and `promtool check metrics` finds nothing to say about the exposition.
 */
import assert from "node:assert/strict";
import { KUBERNETES_CLUSTERS, type KubernetesCluster } from "../../crds/kubernetescluster.ts";
import { freePort } from "../../testing/envtest/process.ts";
import { eventually, sharedControlPlane } from "../../testing/helpers.ts";
import { alertRules, dashboard, dashboardQueries, metricsRead } from "../../testing/monitoring.ts";
import { createMachines } from "../../testing/nico.ts";
import { startNicoProcess } from "../../testing/nico_process.ts";
import { promtool } from "../../testing/promtool.ts";
import { startSimNio } from "../../testing/sim-nio.ts";
import { review, servingCertificate } from "../../testing/admission.ts";

const env = sharedControlPlane();

/** The sample lines of the exposition, by metric family (a histogram's series under the histogram's name). */
function samples(text: string): Map<string, string[]> {
  const types = new Map<string, string>();
  for (const [, name, type] of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) types.set(name!, type!);
  const out = new Map<string, string[]>();
  for (const line of text.split("\n").filter((l) => l && !l.startsWith("#"))) {
    const series = line.split(/[{ ]/)[0]!;
    const family = types.has(series) ? series : series.replace(/_(bucket|sum|count)$/, "");
    out.set(family, [...out.get(family) ?? [], line]);
  }
  return out;
}

Deno.test("a running NICO serves every metric its alerts and dashboard read", async () => {
  const cp = await env.get();
  const ns = await cp.namespace("scrape");
  const nio = startSimNio(cp.client, { namespace: ns, applyDelayMs: 100 });
  const certs = await servingCertificate();
  const [webhookPort, metricsPort] = [freePort(), freePort()];
  const nico = startNicoProcess("nico-scrape", [
    `--kubeconfig=${cp.kubeconfigPath}`,
    "--identity=nico-scrape",
    `--namespace=${ns}`,
    `--lease-namespace=${ns}`,
    "--resolve-refs=false",
    "--workload-connections=false",
    "--webhook-cert-mode=cert-manager",
    `--webhook-cert-dir=${certs.dir}`,
    `--webhook-addr=127.0.0.1:${webhookPort}`,
    `--metrics-addr=127.0.0.1:${metricsPort}`,
    `--health-addr=127.0.0.1:${freePort()}`,
    "--default-git-repo=https://git.example.test/flake.git",
  ], `${cp.dir}/nico-scrape.log`);
  try {
    await createMachines(cp.client, ns, ["cp-1", "w-1"]);
    await cp.client.create(KUBERNETES_CLUSTERS, {
      metadata: { name: "c", namespace: ns },
      spec: {
        gitRepo: "https://git.example.test/flake.git",
        controlPlane: { machines: ["cp-1"] },
        dataPlane: { machines: ["w-1"] },
      },
    });
    await eventually("Ready", async () => {
      const c = await cp.client.get<KubernetesCluster>(KUBERNETES_CLUSTERS, "c", ns);
      return c?.status?.phase === "Ready" && c.status.kubeconfigSecret !== undefined;
    }, 60_000);
    await eventually(
      "the webhook answers",
      () => review(webhookPort, certs.caPem, ns).then((allowed) => !allowed),
      30_000,
    );
    const text = await eventually("the Ready condition on /metrics", async () => {
      const t = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
      return t.includes(`cluster="c",type="Ready",status="True",reason="ClusterReady"} 1`) ? t : undefined;
    }, 30_000);

    const served = samples(text);
    const read = new Set([
      ...(await alertRules()).flatMap((r) => metricsRead(r.expr)),
      ...dashboardQueries(await dashboard()).flatMap((q) => metricsRead(q.expr)),
    ]);
    // The backup gauges have samples only for a cluster with spec.etcd.backup whose etcd NICO sees (this world has
    // neither: no workload connections, no store); here they must be declared, and their samples are checked by
    // tests/unit/cluster_metrics_test.ts from a cluster keeping backups.
    const declared = new Set([...text.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]!));
    const backupOnly = (m: string) => m.startsWith("nico_etcd_backup_");
    const missing = [...read].filter((m) => backupOnly(m) ? !declared.has(m) : !served.get(m)?.length);
    assert.deepEqual(missing, [], "read by an alert or a query, and not served with a sample (declared: backups)");
    assert.ok([...read].some(backupOnly), "the backup alert reads the backup gauges");

    const expiry = served.get("nico_cluster_kubeconfig_expiry_timestamp_seconds")!.find((l) =>
      l.includes(`cluster="c"`)
    );
    const left = Number(expiry?.split(" ").pop()) - Date.now() / 1000;
    assert.ok(Math.abs(left - 365 * 86400) < 3600, `the kubeconfig expires in ${left} s, not in a year`);
    assert.ok(served.get("leader_election_master_status")!.some((l) => l.endsWith(" 1")), "this replica leads");
    assert.ok(
      served.get("nico_webhook_requests_total")!.some((l) =>
        /path="\/validate-kubernetescluster",outcome="denied"/.test(l)
      ),
    );

    const lint = await promtool(["check", "metrics"], { stdin: text });
    assert.equal(lint.code, 0, lint.stdout + lint.stderr);
  } finally {
    await nico.stop();
    await nio.stop();
    await Deno.remove(certs.dir, { recursive: true });
  }
});
