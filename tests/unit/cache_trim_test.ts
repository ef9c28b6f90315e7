/**
 * What the cluster controller's caches drop (controllers/cluster/controller.ts): a Machine's hardware facts, which
 * nothing NICO runs reads (checked here, so the trim stays safe), and nothing else of its status.
 */
import assert from "node:assert/strict";
import { dropJobSpec, dropMachineFacts, keepTargetOnly } from "../../controllers/cluster/controller.ts";

const ROOT = new URL("../../", import.meta.url);

async function tsFilesUnder(folder: string): Promise<string[]> {
  const out: string[] = [];
  for await (const e of Deno.readDir(new URL(`${folder}/`, ROOT))) {
    if (e.isDirectory) out.push(...await tsFilesUnder(`${folder}/${e.name}`));
    else if (e.name.endsWith(".ts")) out.push(`${folder}/${e.name}`);
  }
  return out;
}

Deno.test("dropMachineFacts: the facts go, what NICO reads of a Machine stays", () => {
  const machine = {
    metadata: { name: "m", namespace: "ns", labels: { role: "cp" } },
    spec: { host: "127.0.0.5" },
    status: {
      discoverable: true,
      hasConfiguration: true,
      appliedConfiguration: "c.m",
      conditions: [{ type: "Discoverable", status: "True" }],
      hardwareFacts: { architecture: "x86_64", disks: [{ name: "sda", sizeBytes: 1e12 }], cpu: { cores: 64 } },
    },
  };
  assert.equal(dropMachineFacts(machine), machine, "the Machine itself, its status built anew");
  assert.deepEqual(machine.status, {
    discoverable: true,
    hasConfiguration: true,
    appliedConfiguration: "c.m",
    conditions: [{ type: "Discoverable", status: "True" }],
  });
  const bare = { metadata: { name: "n" } };
  assert.deepEqual(dropMachineFacts(bare), { metadata: { name: "n" } });
});

Deno.test("no code that reads the caches reads a Machine's hardware facts", async () => {
  const files = (await Promise.all(["core", "controllers", "webhooks", "cli", "lib"].map(tsFilesUnder))).flat();
  const readers: string[] = [];
  for (const f of files) {
    const text = await Deno.readTextFile(new URL(f, ROOT));
    if (/hardwareFacts/.test(text) && f !== "controllers/cluster/controller.ts") readers.push(f);
  }
  assert.deepEqual(readers, [], "a reader of hardwareFacts needs the Machine cache to keep them (dropMachineFacts)");
});

Deno.test("keepTargetOnly: another shard's configuration keeps whom it belongs to and which Machine it targets", () => {
  const owner = [{ apiVersion: "v1alpha1", kind: "KubernetesCluster", name: "b", uid: "u-b", controller: true }];
  const config = {
    metadata: {
      name: "b.m",
      namespace: "ns",
      uid: "u-1",
      resourceVersion: "7",
      labels: { "nico.homystack.com/role": "worker" },
      annotations: { "nico.homystack.com/spec-hash": "h" },
      ownerReferences: owner,
    },
    spec: { machineRef: { name: "m" }, gitRepo: "https://127.0.0.1/x.git", additionalFiles: [{ path: "cluster.nix" }] },
    status: { appliedGeneration: 3 },
  };
  assert.deepEqual(keepTargetOnly(config), {
    metadata: {
      name: "b.m",
      namespace: "ns",
      uid: "u-1",
      resourceVersion: "7",
      labels: { "nico.homystack.com/role": "worker" },
      ownerReferences: owner,
    },
    spec: { machineRef: { name: "m" } },
  });
});

Deno.test("dropJobSpec: a run Job keeps its metadata and status, as a new object", () => {
  const job = {
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: { name: "j" },
    spec: { template: {} },
    status: { succeeded: 1 },
  };
  const kept = dropJobSpec(job);
  assert.deepEqual(kept, { apiVersion: "batch/v1", kind: "Job", metadata: { name: "j" }, status: { succeeded: 1 } });
  assert.ok("spec" in job, "the object read is not changed: a field is never deleted (lib/runtime/compact.ts)");
});
