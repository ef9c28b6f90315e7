/**
 * What the version guard refuses, on real workload API servers: a commit that bumps the kubelets under
 * WorkersFirst halts at the first worker (VersionSkew) and nothing else changes, until the order lets the
 * control plane fix it forward (both NIO generations); a node that reports another version than its cluster.nix
 * asks fails at the node timeout naming what it reports (both); a downgrade is refused by the webhook with its
 * message, and what is no Kubernetes version by the CRD itself; a cluster without spec.version works as before.
 */
import assert from "node:assert/strict";
import { KUBERNETES_CLUSTERS, type KubernetesCluster } from "../../crds/kubernetescluster.ts";
import { type Machine, MACHINES, NIXOS_CONFIGURATIONS, type NixosConfiguration } from "../../core/contract/nio.ts";
import type { NioGeneration } from "../../core/contract/nio.ts";
import { configName } from "../../core/contract/names.ts";
import { SPEC_HASH_ANNOTATION } from "../../core/contract/labels.ts";
import { askedVersion, clusterNixOf } from "../../core/render/clusternix.ts";
import { ApiError } from "../../lib/kube/errors.ts";
import { EVENTS, VALIDATING_WEBHOOKS } from "../../lib/kube/resources.ts";
import type { KubeObject } from "../../lib/kube/client.ts";
import { createCa, issueCert } from "../../lib/pki.ts";
import { Informer } from "../../lib/runtime/informer.ts";
import { silentLogger } from "../../lib/runtime/log.ts";
import { webhookApp } from "../../webhooks/app.ts";
import { subjectAccessReviews } from "../../webhooks/authorize.ts";
import { webhookConfigurations } from "../../webhooks/configurations.ts";
import { informerLookup } from "../../webhooks/lookup.ts";
import { startWebhookServer } from "../../webhooks/server.ts";
import type { KubeClient } from "../../lib/kube/client.ts";
import { eventually, sharedControlPlane } from "../../testing/helpers.ts";
import { condition, type Scenario, startScenario } from "../../testing/scenario.ts";
import { KUBERNETES_VERSION_ANNOTATION } from "../../testing/workload_versions.ts";

const env = sharedControlPlane();
const V1 = "https://git.example.test/v1.git";
const V2 = "https://git.example.test/v2.git";

/** Ready, every node running the desired configuration, at `version`. */
const readyAt = (version: string) => (c: KubernetesCluster) =>
  c.status?.observedGeneration === c.metadata.generation && c.status?.phase === "Ready" &&
  condition(c, "UpToDate")?.status === "True" && condition(c, "NodesHealthy")?.status === "True" &&
  c.status?.version === version;

const repoOf = async (s: Scenario, m: string) =>
  (await s.client.get<NixosConfiguration>(NIXOS_CONFIGURATIONS, configName("c", m), s.ns))!.spec.gitRepo;

const GENERATIONS: NioGeneration[] = ["v1", "older"];

for (const generation of GENERATIONS) {
  Deno.test({
    name: `NIO ${generation}: a commit that bumps the kubelets under WorkersFirst halts at the first worker`,
    sanitizeResources: false,
    sanitizeOps: false,
    fn: async () => {
      const cp = await env.get();
      const s = await startScenario(cp, `bump-${generation}`, {
        hostBlock: generation === "v1" ? 74 : 75,
        generation,
        carriedVersion: (cfg) => (cfg.spec.gitRepo === V2 ? "1.32.0" : "1.31.0"),
      });
      try {
        await s.createCluster({
          gitRepo: V1,
          controlPlane: { machines: ["cp-1"] },
          dataPlane: { machines: ["w-1", "w-2"] },
        });
        await s.until("Ready at 1.31.0", readyAt("1.31.0"));
        await s.client.mergePatch(KUBERNETES_CLUSTERS, "c", s.ns, { spec: { gitRepo: V2 } });
        const halted = await s.until("Stalled VersionSkew", (c) => condition(c, "Stalled")?.reason === "VersionSkew");
        assert.equal(
          condition(halted, "Stalled")?.message,
          "VersionSkew: w-1's kubelet 1.32.0 is newer than cp-1's API server 1.31.0: a kubelet must not be newer " +
            "than kube-apiserver; roll the control plane first (spec.rollout.order: ControlPlaneFirst) or set " +
            "spec.version; the rollout is halted at w-1: nothing else is touched until it recovers or the spec " +
            "changes",
        );
        assert.equal(condition(halted, "RollingOut")?.reason, "RolloutStalled");
        assert.match(condition(halted, "RollingOut")!.message, /^halted at w-1 \(VersionSkew: w-1's kubelet 1\.32\.0/);
        // A Warning Event says so too, once, where `kubectl describe` and `kubectl events` show it.
        const skew = await eventually("a VersionSkew Warning Event", async () => {
          const found = (await s.client.list<KubeObject & { reason?: string; type?: string; note?: string }>(
            EVENTS,
            { namespace: s.ns },
          )).items.filter((e) => e.reason === "VersionSkew");
          return found.length ? found : undefined;
        }, 30_000);
        assert.deepEqual(skew.map((e) => e.type), ["Warning"]);
        assert.match(skew[0]!.note ?? "", /^VersionSkew: w-1's kubelet 1\.32\.0 is newer than cp-1's API server/);
        // Nothing else changes, even in a later pass.
        await s.settled();
        assert.deepEqual([await repoOf(s, "w-1"), await repoOf(s, "w-2"), await repoOf(s, "cp-1")], [V2, V1, V1]);
        assert.equal((await s.cluster())?.status?.version, "1.31.0");

        // The fix the message names: the control plane first. It fixes forward, then the last worker follows.
        await s.client.mergePatch(KUBERNETES_CLUSTERS, "c", s.ns, {
          spec: { rollout: { order: "ControlPlaneFirst" } },
        });
        const fixed = await s.until("Ready at 1.32.0", readyAt("1.32.0"), 90_000);
        assert.equal(condition(fixed, "Stalled")?.reason, "NotStalled");
        assert.deepEqual([await repoOf(s, "w-2"), await repoOf(s, "cp-1")], [V2, V2]);
      } finally {
        await s[Symbol.asyncDispose]();
      }
    },
  });

  Deno.test({
    name: `NIO ${generation}: a node that reports another version than asked fails at the node timeout`,
    sanitizeResources: false,
    sanitizeOps: false,
    fn: async () => {
      const cp = await env.get();
      const s = await startScenario(cp, `mismatch-${generation}`, {
        hostBlock: generation === "v1" ? 76 : 77,
        generation,
      });
      try {
        await s.machines(["cp-1", "w-1"], { "w-1": { [KUBERNETES_VERSION_ANNOTATION]: "1.30.2" } });
        await s.client.create(KUBERNETES_CLUSTERS, {
          metadata: { name: "c", namespace: s.ns },
          spec: {
            gitRepo: V1,
            version: "1.31",
            controlPlane: { machines: ["cp-1"] },
            dataPlane: { machines: ["w-1"] },
            rollout: { nodeTimeout: "20s" },
          },
        });
        const joining = await s.until(
          "w-1 waits for its version",
          (c) =>
            /w-1 is Ready but its kubelet reports v1\.30\.2\+sim; waiting for 1\.31/.test(
              condition(c, "DataPlaneReady")?.message ?? "",
            ),
        );
        assert.equal(condition(joining, "Ready")?.status, "False");
        const failed = await s.until("w-1 Failed", (c) => c.status?.phase === "Failed", 60_000);
        assert.match(
          condition(failed, "Ready")!.message,
          /w-1 \(VersionMismatch: Node w-1 is Ready but its kubelet reports v1\.30\.2\+sim, not 1\.31 as its cluster\.nix asks \(kubernetesVersion\), 20s after it applied/,
        );
        assert.equal(condition(failed, "Stalled")?.reason, "NodeFailed");
      } finally {
        await s[Symbol.asyncDispose]();
      }
    },
  });
}

/**
 * NICO's validating webhook in front of the management API server, for namespace `ns` only (the control plane is
 * shared): informers, the server on loopback TLS, and its configuration, answering once it answers.
 */
async function namespacedWebhook(client: KubeClient, ns: string): Promise<{ stop(): Promise<void> }> {
  const opts = { logger: silentLogger, resyncMs: 0 };
  const informers = {
    machines: new Informer<Machine>(client, MACHINES, opts),
    configs: new Informer<NixosConfiguration>(client, NIXOS_CONFIGURATIONS, opts),
    clusters: new Informer<KubernetesCluster>(client, KUBERNETES_CLUSTERS, opts),
  };
  for (const i of Object.values(informers)) i.start();
  await Promise.all(Object.values(informers).map((i) => i.synced()));
  const ca = await createCa({ commonName: "versions-webhook-ca" });
  const tls = await issueCert(ca, { commonName: "127.0.0.1", ipAddresses: ["127.0.0.1"], usage: "server", days: 1 });
  const app = webhookApp({ lookup: informerLookup(informers), access: subjectAccessReviews(client) });
  const server = await startWebhookServer({ app, hostname: "127.0.0.1", port: 0, tls });
  const name = `nico-versions-${ns}`;
  const { validating } = webhookConfigurations({
    name,
    url: `https://127.0.0.1:${server.port}`,
    caBundlePem: ca.certPem,
  });
  const only = { namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": ns } } };
  await client.apply(VALIDATING_WEBHOOKS, {
    ...validating,
    webhooks: validating.webhooks.map((w) => ({ ...w, ...only })),
  });
  await eventually(
    "the webhook to answer",
    async () => {
      const err = await client.create(KUBERNETES_CLUSTERS, {
        metadata: { name: "probe", namespace: ns },
        spec: { controlPlane: { machines: ["nowhere"] } },
      }, { dryRun: true }).then(() => undefined, (e) => e);
      return err instanceof ApiError && /Machine nowhere does not exist/.test(err.message);
    },
    30_000,
    250,
  );
  return {
    async stop() {
      await client.delete(VALIDATING_WEBHOOKS, name);
      await server.stop();
      for (const i of Object.values(informers)) await i.stop();
    },
  };
}

/** The error a write of `spec` to cluster `c` answers (undefined: it was stored). */
const refusal = (s: Scenario, spec: Record<string, unknown>) =>
  s.client.mergePatch(KUBERNETES_CLUSTERS, "c", s.ns, { spec }).then(() => undefined, (e) => e as Error);

Deno.test({
  name: "a downgrade is refused with its message; what is no Kubernetes version is refused by the CRD itself",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const cp = await env.get();
    const s = await startScenario(cp, "downgrade", { hostBlock: 78 });
    try {
      await s.createCluster({
        gitRepo: V1,
        version: "1.31",
        controlPlane: { machines: ["cp-1"] },
        dataPlane: { machines: ["w-1"] },
      });
      await s.until("Ready at 1.31.0", readyAt("1.31.0"));
      // No webhook yet: the CRD's own rule refuses a value that is no Kubernetes version.
      const bad = await refusal(s, { version: "1.31.4+k3s1" });
      assert.ok(bad instanceof ApiError && bad.status === 422, String(bad));
      assert.match(bad.message, /spec\.version must be a Kubernetes version such as 1\.31 or 1\.31\.4/);
      const webhook = await namespacedWebhook(s.client, s.ns);
      try {
        const down = await refusal(s, { version: "1.30" });
        assert.ok(down instanceof ApiError, String(down));
        assert.match(
          down.message,
          /spec\.version: 1\.30 is a downgrade: the control plane runs 1\.31\.0, and Kubernetes does not support going back a minor; set spec\.version to 1\.31 or later/,
        );
        assert.equal((await s.cluster())?.spec.version, "1.31", "nothing stored");
        assert.equal(await refusal(s, { version: "1.31.0" }), undefined, "a patch of the same minor passes");
      } finally {
        await webhook.stop();
      }
    } finally {
      await s[Symbol.asyncDispose]();
    }
  },
});

Deno.test({
  name: "a cluster without spec.version works as before: no version asked, WorkersFirst, its versions reported",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const cp = await env.get();
    const s = await startScenario(cp, "noversion", { hostBlock: 79 });
    try {
      await s.createCluster({
        gitRepo: V1,
        controlPlane: { machines: ["cp-1"] },
        dataPlane: { machines: ["w-1", "w-2"] },
      });
      const up = await s.until("Ready", readyAt("1.31.0"));
      assert.equal(up.status?.versions?.target, undefined);
      assert.deepEqual(up.status?.versions?.nodes?.map((n) => n.asked), [undefined, undefined, undefined]);
      for (const m of ["cp-1", "w-1", "w-2"]) {
        const cfg = await s.client.get<NixosConfiguration>(NIXOS_CONFIGURATIONS, configName("c", m), s.ns);
        assert.equal(askedVersion(clusterNixOf(cfg!)), undefined, `${m}'s cluster.nix asks for a version`);
      }
      const from = Date.now();
      await s.client.mergePatch(KUBERNETES_CLUSTERS, "c", s.ns, { spec: { gitRepo: V2 } });
      await s.until("Ready on V2", (c) => readyAt("1.31.0")(c) && c.status?.rollout?.upToDate === 3, 90_000);
      // The first apply of each node's new spec (NIO v1 also runs the old one on its schedule meanwhile).
      const configs = (await s.client.list<NixosConfiguration>(NIXOS_CONFIGURATIONS, { namespace: s.ns })).items;
      const hashOf = new Map(configs.map((c) => [c.metadata.name, c.metadata.annotations?.[SPEC_HASH_ANNOTATION]]));
      const order = s.nio.history.filter((e) =>
        e.kind === "applied" && e.at >= from && e.specHash === hashOf.get(e.name)
      )
        .map((e) => e.name);
      assert.deepEqual([...new Set(order)], ["c.w-1", "c.w-2", "c.cp-1"], "WorkersFirst, as spec.rollout.order says");
    } finally {
      await s[Symbol.asyncDispose]();
    }
  },
});
