/**
 * One definition of each fact that used to be written twice, each tested
 * where the copies disagreed (or, where they agreed, that the one
 * definition says what both said). Pure: no control plane.
 */
import assert from "node:assert/strict";
import { Duration, durationMs, type KubernetesCluster, PHASES } from "../../crds/kubernetescluster.ts";
import { decodeBase64, encodeBase64, isRecord } from "../../lib/encoding.ts";
import { formatDuration, parseDuration } from "../../lib/duration.ts";
import { isCommit } from "../../lib/git/url.ts";
import { parseLsRemote } from "../../lib/git/resolve.ts";
import { microTime, timestamp } from "../../lib/kube/meta.ts";
import { Metrics } from "../../lib/metrics.ts";
import { silentLogger } from "../../lib/runtime/log.ts";
import { CLUSTER_LABEL, planeOfRole, roleOfPlane } from "../../core/contract/labels.ts";
import { clusterOwnerReference, isOwnedBy } from "../../core/contract/owner.ts";
import { desiredConfigurations } from "../../core/render/desired.ts";
import { selectMachines } from "../../core/machines/selection.ts";
import { readKubeconfig, renderKubeconfig } from "../../core/render/kubeconfig.ts";
import { parseRunOptions } from "../../cli/options.ts";
import { observeClusters } from "../../controllers/cluster/metrics.ts";
import { pinRevision } from "../../controllers/cluster/phases/revision.ts";
import type { RevisionTracker } from "../../controllers/cluster/revisions.ts";
import { buildScope, type ClusterDeps, clusterDeps } from "../../controllers/cluster/scope.ts";
import { clusterSettings } from "../../controllers/cluster/settings.ts";
import { ownsSecret } from "../../controllers/cluster/secrets.ts";
import { cluster, machine, NS, ownedConfig, UID } from "../../testing/objects.ts";

const SHA256 = "a".repeat(64);
const SHA1 = "b".repeat(40);

Deno.test("commit: a 64-hex (SHA-256) commit is a commit everywhere", () => {
  assert.ok(isCommit(SHA1) && isCommit(SHA256));
  assert.ok(!isCommit("main") && !isCommit("a".repeat(41)));
  assert.deepEqual([...parseLsRemote(`${SHA256}\trefs/heads/main\n`)], [["refs/heads/main", SHA256]]);

  // The reconciler held only 40-hex commits while a ref failed to resolve: a SHA-256 repository blocked instead.
  const c = cluster({ controlPlane: { machines: ["cp-1"] } });
  const cfg = ownedConfig("prod", "cp-1", "control-plane");
  cfg.spec.ref = SHA256;
  const tracker = {
    lookup: () => ({ error: "git ls-remote failed: unreachable" }),
  } as unknown as RevisionTracker;
  const deps: ClusterDeps = clusterDeps({
    client: undefined as never,
    recorder: undefined as never,
    revisionTracker: tracker,
  }, clusterSettings({ nodeTimeout: 1, defaultGitRepo: "https://git.example.test/flake.git" }));
  const kc = { metadata: { name: "prod", namespace: NS, uid: UID }, spec: c.spec } as unknown as KubernetesCluster;
  const s = buildScope(
    deps,
    kc,
    c.spec,
    {
      machines: [machine("cp-1")],
      configs: [cfg],
      config: () => cfg,
      secret: () => undefined,
      jobs: [],
      decommissions: [],
    },
    new Date(),
    silentLogger,
  );
  const pinned = pinRevision(s, "https://git.example.test/flake.git");
  assert.equal(pinned.blocked, undefined, "nodes stay on the commit they carry");
  assert.equal(pinned.revision, SHA256);
});

Deno.test("phases: the metrics start every phase of the CRD at zero, Updating included", async () => {
  assert.deepEqual([...PHASES], ["Provisioning", "Ready", "Updating", "Failed", "Deleting"]);
  const metrics = new Metrics();
  observeClusters(metrics, []);
  const text = await metrics.text();
  for (const phase of PHASES) assert.match(text, new RegExp(`nico_clusters\\{phase="${phase}"\\} 0`));
});

Deno.test("durations: one parser and one format; `ms` means milliseconds, messages read back as written", () => {
  assert.equal(parseDuration("500ms"), 500);
  // The spec's parser read `500ms` as 500 seconds (its unit was the last letter).
  assert.equal(durationMs("500ms"), 500);
  assert.equal(durationMs("90s"), 90_000);
  assert.equal(Duration.safeParse("500ms").success, false, "a spec duration is whole seconds at least");
  assert.equal(Duration.safeParse("2h").success, true);
  assert.equal(parseRunOptions(["--node-timeout=500ms"], {}).nodeTimeout, 500);
  // The node timeout message rounded to minutes: 3 s read "0m", 90 s read "2m".
  assert.equal(formatDuration(3000), "3s");
  assert.equal(formatDuration(90_000), "90s");
  assert.equal(formatDuration(30 * 60_000), "30m");
  assert.equal(formatDuration(2 * 3_600_000), "2h");
  assert.equal(formatDuration(1500), "1500ms");
});

Deno.test("isRecord: one definition for the webhook's three copies", () => {
  assert.ok(isRecord({}));
  assert.ok(!isRecord(null) && !isRecord([]) && !isRecord("x"));
});

Deno.test("times: microTime for Events and Leases, timestamp for conditions", () => {
  const d = new Date("2026-01-01T12:00:00.123Z");
  assert.equal(microTime(d), "2026-01-01T12:00:00.123000Z");
  assert.equal(microTime(d.getTime()), "2026-01-01T12:00:00.123000Z");
  assert.equal(timestamp(d), "2026-01-01T12:00:00Z");
});

Deno.test("base64: UTF-8 both ways (btoa/atob alone mangle or throw beyond ASCII)", () => {
  const text = "grüße ✓";
  assert.equal(decodeBase64(encodeBase64(text)), text);
  assert.throws(() => btoa(text), "what core/render/kubeconfig.ts used to call");
  assert.notEqual(atob(encodeBase64("grüße")), "grüße", "what controllers/cluster/secrets.ts used to call");
  const kc = renderKubeconfig("prod", "https://127.0.0.1:6443", "CA", { certPem: "CERT ✓", keyPem: "KEY" });
  assert.equal(readKubeconfig(kc)?.certPem, "CERT ✓");
});

Deno.test("role and plane: one mapping both ways", () => {
  assert.equal(planeOfRole("control-plane"), "controlPlane");
  assert.equal(planeOfRole("worker"), "dataPlane");
  assert.equal(planeOfRole(undefined), "dataPlane");
  assert.equal(roleOfPlane("controlPlane"), "control-plane");
  assert.equal(planeOfRole(roleOfPlane("dataPlane")), "dataPlane");
});

Deno.test("ownership: configurations and Secrets follow one rule, the controller uid", () => {
  const ref = { name: "prod", namespace: NS, uid: UID };
  const c = cluster({ controlPlane: { machines: ["cp-1"] } });
  const selection = selectMachines({ cluster: c, machines: [machine("cp-1")], configurations: [] });
  const [cfg] = desiredConfigurations({
    cluster: { ...c, uid: UID },
    selection,
    machines: [machine("cp-1")],
    bootstrap: "cp-1",
    endpoint: { host: "127.0.0.1", port: 6443 },
    gitRepo: "https://git.example.test/flake.git",
    nio: "v1",
  });
  assert.deepEqual(cfg!.metadata.ownerReferences, [clusterOwnerReference({ name: "prod", uid: UID })]);

  // Ours by uid, its cluster label removed by someone: the label check said foreign, the uid check ours.
  const unlabelled = { ...cfg!, metadata: { ...cfg!.metadata, labels: {} } };
  assert.ok(isOwnedBy(unlabelled, ref));
  const kc = { metadata: { name: "prod", namespace: NS, uid: UID } } as KubernetesCluster;
  assert.ok(ownsSecret(unlabelled, kc), "Secrets and configurations agree");
  // Labelled for the cluster but controlled by another object of that name (a deleted predecessor): not ours.
  const predecessor = {
    metadata: {
      name: "prod-cp-1",
      labels: { [CLUSTER_LABEL]: "prod" },
      ownerReferences: [clusterOwnerReference({ name: "prod", uid: "old" })],
    },
  };
  assert.ok(!isOwnedBy(predecessor, ref));
  assert.ok(!ownsSecret(predecessor, kc));
  // No uid yet (admission of a new cluster): the label is all there is.
  assert.ok(isOwnedBy(predecessor, { name: "prod", namespace: NS }));
});
