/**
 * NIO v1 runs a node at its `dayTwoSchedule`; NICO sets `* * * * *` on the node it rolls with a change that keeps
 * the commit. A pause in the middle of that step must not leave the node running every minute (seen on the real
 * NIO v1: a paused node ran each minute until the unpause): the resting schedule comes back, and nothing else moves.
 */
import assert from "node:assert/strict";
import { KUBERNETES_CLUSTERS } from "../../crds/kubernetescluster.ts";
import { NIXOS_CONFIGURATIONS, type NixosConfiguration } from "../../core/contract/nio.ts";
import { RUN_SOON_SCHEDULE, sameSchedule } from "../../core/nodes/runs.ts";
import { SPEC_HASH_ANNOTATION } from "../../core/contract/labels.ts";
import { eventually } from "../../testing/helpers.ts";
import { createMachines, machinesDiscovered, settled } from "../../testing/nico.ts";
import { world } from "../../testing/world.ts";

const V1 = "https://git.example.test/v1.git";

Deno.test("a pause mid-step gives the node its resting schedule back and changes nothing else", async () => {
  // NIO's minute is a real one, as on a real NIO: w-1 waits on `* * * * *` for up to a minute, and the pause comes
  // within a second of that (should a tick come first, w-1 runs and gets its schedule back anyway: no false failure).
  await using w = await world("pause-sched", {
    nio: { applyDelayMs: 150, minuteMs: 60_000 },
    nico: { statusDelayMs: 0 },
  });
  const { cp, ns, nico } = w;
  const config = (m: string) => cp.client.get<NixosConfiguration>(NIXOS_CONFIGURATIONS, `c.${m}`, ns);
  await createMachines(cp.client, ns, ["cp-1", "w-1", "w-2"]);
  // Every Machine known before the cluster exists: a bring-up that must re-run a node would wait for a tick.
  await machinesDiscovered(cp.client, ns, ["cp-1", "w-1", "w-2"]);
  await cp.client.create(KUBERNETES_CLUSTERS, {
    metadata: { name: "c", namespace: ns },
    spec: { gitRepo: V1, controlPlane: { machines: ["cp-1"] }, dataPlane: { machines: ["w-1"] } },
  });
  await w.until("Ready", (c) => c.status?.phase === "Ready" && c.status.rollout?.upToDate === 2, 150_000);
  // A second worker changes cluster.nix on the others, keeping the commit: w-1 goes first and waits for a tick.
  await cp.client.mergePatch(KUBERNETES_CLUSTERS, "c", ns, { spec: { dataPlane: { machines: ["w-1", "w-2"] } } });
  await eventually("w-1 asked to run every minute", async () => {
    return (await config("w-1"))?.spec.dayTwoSchedule === RUN_SOON_SCHEDULE;
  }, 30_000);
  const before = { w1: await config("w-1"), cp1: await config("cp-1") };
  await cp.client.mergePatch(KUBERNETES_CLUSTERS, "c", ns, { spec: { paused: true } });
  const rested = await eventually("w-1's resting schedule back while paused", async () => {
    const w1 = await config("w-1");
    return w1 && w1.spec.dayTwoSchedule !== RUN_SOON_SCHEDULE ? w1 : undefined;
  }, 30_000);
  // The cluster sets no spec.nio.dayTwoSchedule: NIO's own default, however the API server stores it.
  assert.ok(sameSchedule(rested.spec.dayTwoSchedule, undefined), `w-1's schedule is ${rested.spec.dayTwoSchedule}`);
  await settled(cp.client, nico, ns, "c");
  const hash = (c: NixosConfiguration | undefined) => c?.metadata.annotations?.[SPEC_HASH_ANNOTATION];
  assert.equal(hash(await config("w-1")), hash(before.w1), "w-1's spec is the one it had (only the schedule moved)");
  const cp1 = await config("cp-1");
  assert.equal(hash(cp1), hash(before.cp1), "cp-1 changed while paused");
  // What NICO writes of a configuration: its spec (the generation), labels and annotations. NIO's status writes (a
  // scheduled tick on a busy machine) move the resourceVersion, not these.
  const nicos = (c: NixosConfiguration | undefined) =>
    JSON.stringify([c?.metadata.generation, c?.metadata.labels, c?.metadata.annotations]);
  assert.equal(nicos(cp1), nicos(before.cp1), "cp-1 was written while paused");
});
