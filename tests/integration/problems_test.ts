// deno-lint-ignore-file no-explicit-any
/**
 * Errors meant for the user reach the cluster's status and Events, on the
 * real API server: a foreign NixosConfiguration or Secret in the way, and an
 * API error injected by a ValidatingAdmissionPolicy that refuses NICO's
 * configurations. Each shows a non-empty phase, a `Ready` condition naming
 * the object and what to do, and a Warning Event.
 */
import assert from "node:assert/strict";
import type { KubernetesCluster } from "../../crds/kubernetescluster.ts";
import { EVENTS, SECRETS } from "../../lib/kube/resources.ts";
import { KUBERNETES_CLUSTERS } from "../../crds/kubernetescluster.ts";
import { NIXOS_CONFIGURATIONS } from "../../core/contract/nio.ts";
import type { KubeClient } from "../../lib/kube/client.ts";
import { eventually } from "../../testing/helpers.ts";
import { createMachines, machinesDiscovered } from "../../testing/nico.ts";
import { type World, world } from "../../testing/world.ts";

const setup = (prefix: string) => world(prefix, { nio: { applyDelayMs: 100, removeDelayMs: 100 } });

const readyOf = (c: KubernetesCluster | undefined) => c?.status?.conditions?.find((x) => x.type === "Ready");

/** Waits until the cluster's Ready condition has `reason`; answers the cluster. */
async function blockedWith(e: World, name: string, reason: string): Promise<KubernetesCluster> {
  return await e.until(`cluster ${name} shows ${reason}`, (c) => readyOf(c)?.reason === reason, 60_000, name);
}

/** Waits for a Warning Event about the cluster with `reason`; answers its note. */
async function warning(client: KubeClient, ns: string, name: string, reason: string): Promise<string> {
  return await eventually(`a Warning Event ${reason} about ${name}`, async () => {
    const events = (await client.list<any>(EVENTS, { namespace: ns })).items;
    const e = events.find((e) => e.regarding?.name === name && e.type === "Warning" && e.reason === reason);
    return e?.note as string | undefined;
  });
}

const cluster = (ns: string, name: string, spec: unknown): any => ({ metadata: { name, namespace: ns }, spec });

Deno.test("a foreign NixosConfiguration in the way: Failed, a condition naming it and what to do, a Warning", async () => {
  await using e = await setup("foreigncfg");
  await createMachines(e.client, e.ns, ["cp-1", "elsewhere"]);
  // Someone else's configuration, named as NICO would name cp-1's, for another Machine.
  await e.client.create(NIXOS_CONFIGURATIONS, {
    metadata: { name: "c.cp-1", namespace: e.ns },
    spec: { machineRef: { name: "elsewhere" }, gitRepo: "https://git.example.test/other.git", flake: "#elsewhere" },
  } as any);
  await e.client.create(KUBERNETES_CLUSTERS, cluster(e.ns, "c", { controlPlane: { machines: ["cp-1"] } }));
  const c = await blockedWith(e, "c", "ForeignConfiguration");
  assert.equal(c.status?.phase, "Failed");
  const ready = readyOf(c)!;
  assert.equal(ready.status, "False");
  assert.match(ready.message, /NixosConfiguration c\.cp-1 exists but does not belong to cluster c/);
  assert.match(ready.message, /delete it, or remove Machine cp-1/);
  // What NICO could still observe stays in status.
  assert.deepEqual(c.status?.controlPlane?.machines, ["cp-1"]);
  const note = await warning(e.client, e.ns, "c", "ForeignConfiguration");
  assert.equal(note, ready.message);

  // The user deletes it: the cluster goes on to Ready.
  await e.client.delete(NIXOS_CONFIGURATIONS, "c.cp-1", e.ns);
  await e.until("Ready after the foreign configuration is gone", (x) => x.status?.phase === "Ready", 60_000);
});

Deno.test("a foreign Secret in the way: Failed, a condition naming it and what to do, a Warning", async () => {
  await using e = await setup("foreignsecret");
  await createMachines(e.client, e.ns, ["cp-1"]);
  // Named like NICO's join token, labelled for the cluster (so NICO's cache sees it), but nobody's.
  await e.client.create(SECRETS, {
    metadata: { name: "c-join-token", namespace: e.ns, labels: { "nico.homystack.com/cluster": "c" } },
    data: { token: btoa("not ours") },
  } as any);
  await e.client.create(KUBERNETES_CLUSTERS, cluster(e.ns, "c", { controlPlane: { machines: ["cp-1"] } }));
  const c = await blockedWith(e, "c", "ForeignSecret");
  assert.equal(c.status?.phase, "Failed");
  assert.match(
    readyOf(c)!.message,
    /Secret c-join-token exists but does not belong to cluster c; delete or rename it/,
  );
  const note = await warning(e.client, e.ns, "c", "ForeignSecret");
  assert.match(note, /c-join-token/);
  const cfgs = (await e.client.list(NIXOS_CONFIGURATIONS, { namespace: e.ns })).items;
  assert.equal(cfgs.length, 0, "nothing is rendered while the join token is someone else's");
});

// Every Secret NICO owns, against a foreign one of the same name: NICO never adopts it (for the CA, that would
// ship someone else's key to every control-plane node) and says so.
for (const [secret, key] of [["c-ca", "tls.key"], ["c-ca-key", "tls.key"], ["c-kubeconfig", "value"]] as const) {
  Deno.test(`a foreign ${secret} is never adopted: ForeignSecret, and its content goes nowhere`, async () => {
    await using e = await setup(`foreign-${secret.slice(2)}`);
    await createMachines(e.client, e.ns, ["cp-1"]);
    await e.client.create(SECRETS, {
      metadata: { name: secret, namespace: e.ns, labels: { "nico.homystack.com/cluster": "c" } },
      data: { [key]: btoa("someone else's"), ...(secret === "c-ca" ? { "tls.crt": btoa("not ours") } : {}) },
    } as any);
    await e.client.create(KUBERNETES_CLUSTERS, cluster(e.ns, "c", { controlPlane: { machines: ["cp-1"] } }));
    const c = await blockedWith(e, "c", "ForeignSecret");
    assert.match(readyOf(c)!.message, new RegExp(`Secret ${secret} exists but does not belong to cluster c`));
    const stillForeign = await e.client.get<any>(SECRETS, secret, e.ns);
    assert.equal(stillForeign.data[key], btoa("someone else's"), "NICO did not overwrite it");
    assert.equal(stillForeign.metadata.ownerReferences, undefined, "NICO did not adopt it");
    if (secret === "c-ca") {
      assert.equal(await e.client.get(SECRETS, "c-ca-key", e.ns), undefined, "the foreign key was not copied");
      const cfgs = (await e.client.list(NIXOS_CONFIGURATIONS, { namespace: e.ns })).items;
      assert.equal(cfgs.length, 0, "no node got a configuration pointing at the foreign CA");
    }
  });
}

Deno.test("an API error (an admission policy refuses NICO's configurations): ReconcileError with its text, a Warning", async () => {
  await using e = await setup("fault");
  const policy = `nico-fault-${e.ns}`;
  e.defer(() => e.cp.kubectl(["delete", "validatingadmissionpolicybinding,validatingadmissionpolicy", policy]));
  const yaml = `
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: { name: ${policy} }
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
      - apiGroups: ["nio.homystack.com"]
        apiVersions: ["*"]
        operations: ["CREATE", "UPDATE"]
        resources: ["nixosconfigurations"]
  validations:
    - expression: "false"
      message: "fault injected by the test: NixosConfigurations are refused in this namespace"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: { name: ${policy} }
spec:
  policyName: ${policy}
  validationActions: [Deny]
  matchResources:
    namespaceSelector:
      matchLabels: { kubernetes.io/metadata.name: ${e.ns} }
`;
  const applied = await e.cp.kubectl(["apply", "-f", "-"], { stdin: yaml });
  assert.equal(applied.code, 0, applied.stderr);
  // The policy takes effect asynchronously: wait until a probe is refused.
  await eventually("the admission policy refuses a probe", async () => {
    try {
      await e.client.create(NIXOS_CONFIGURATIONS, {
        metadata: { name: "probe", namespace: e.ns },
        spec: { machineRef: { name: "probe" } },
      } as any);
      await e.client.delete(NIXOS_CONFIGURATIONS, "probe", e.ns);
      return false;
    } catch (err) {
      return /fault injected/.test(String(err));
    }
  });
  await createMachines(e.client, e.ns, ["cp-1"]);
  await e.client.create(KUBERNETES_CLUSTERS, cluster(e.ns, "c", { controlPlane: { machines: ["cp-1"] } }));
  const c = await blockedWith(e, "c", "ReconcileError");
  assert.ok(c.status?.phase, "the phase is never empty");
  assert.equal(c.status?.phase, "Provisioning");
  assert.match(readyOf(c)!.message, /nixosconfigurations.*fault injected by the test/);
  const note = await warning(e.client, e.ns, "c", "ReconcileError");
  assert.match(note, /fault injected/);
});

Deno.test("a configuration of ours whose cluster label was removed is still ours: the label comes back", async () => {
  await using e = await setup("unlabelled");
  await createMachines(e.client, e.ns, ["cp-1"]);
  await e.client.create(KUBERNETES_CLUSTERS, cluster(e.ns, "c", { controlPlane: { machines: ["cp-1"] } }));
  await e.until("Ready", (x) => x.status?.phase === "Ready");
  // Ownership is the controller reference: without the label, NICO used to call its own object foreign.
  await e.client.jsonPatch(NIXOS_CONFIGURATIONS, "c.cp-1", e.ns, [
    { op: "remove", path: "/metadata/labels/nico.homystack.com~1cluster" },
  ]);
  await e.client.mergePatch(KUBERNETES_CLUSTERS, "c", e.ns, { metadata: { annotations: { poke: "1" } } });
  await eventually("the label is back", async () => {
    const cfg = await e.client.get<any>(NIXOS_CONFIGURATIONS, "c.cp-1", e.ns);
    return cfg?.metadata.labels?.["nico.homystack.com/cluster"] === "c";
  });
  await e.until(
    "still Ready, no problem reported",
    (x) => x.status?.phase === "Ready" && readyOf(x)?.status === "True",
  );
});

Deno.test("an explicit Machine that is missing is named in status", async () => {
  await using e = await setup("miss");
  await createMachines(e.client, e.ns, ["cp-1"]);
  await e.client.create(KUBERNETES_CLUSTERS, cluster(e.ns, "c", { controlPlane: { machines: ["cp-1", "ghost"] } }));
  const c = await e.until(
    "MachinesUnavailable",
    (x) => x.status?.conditions?.find((y) => y.type === "MachinesAvailable")?.reason === "MachinesUnavailable",
  );
  assert.match(
    c.status!.conditions!.find((y) => y.type === "MachinesAvailable")!.message,
    /Machine ghost does not exist/,
  );
});

Deno.test("a NIO failure makes the cluster Failed with the node named, then it recovers", async () => {
  await using e = await setup("fail");
  await createMachines(e.client, e.ns, ["cp-1", "w-1"]);
  await machinesDiscovered(e.client, e.ns, ["cp-1", "w-1"]);
  // NIO waits while the fault is set: its first run of w-1 could otherwise end before the annotation is there.
  await e.stopNio();
  await e.client.create(
    KUBERNETES_CLUSTERS,
    cluster(e.ns, "c", { controlPlane: { machines: ["cp-1"] }, dataPlane: { machines: ["w-1"] } }),
  );
  await eventually("configuration of w-1", () => e.client.get(NIXOS_CONFIGURATIONS, "c.w-1", e.ns));
  await e.client.mergePatch(NIXOS_CONFIGURATIONS, "c.w-1", e.ns, {
    metadata: { annotations: { "sim.nio.homystack.com/fail-apply": "true" } },
  });
  await e.startNio();
  const failed = await e.until("Failed", (c) => c.status?.phase === "Failed");
  assert.match(readyOf(failed)!.message, /w-1 \(the switch failed on attempt 1 of run /);
  assert.equal(failed.status!.conditions!.find((x) => x.type === "DataPlaneReady")!.reason, "NodeFailed");
  await e.client.mergePatch(NIXOS_CONFIGURATIONS, "c.w-1", e.ns, {
    metadata: { annotations: { "sim.nio.homystack.com/fail-apply": null } },
  });
  await e.until("Ready again", (x) => x.status?.phase === "Ready", 30_000);
});
