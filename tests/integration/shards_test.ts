/**
 * Two shards over one Machine pool, on the real API server: two `nico run`
 * processes, `--shard a` and the default shard, each leader-elected on a
 * Lease of its own, and four clusters (two per shard) choosing by selector
 * from one pool of eight Machines, all at once. An independent ledger
 * (testing/ledger.ts: watches of its own) sees no Machine booked twice; each
 * cluster's status and Events come from its own shard only; a cluster
 * relabelled in the middle of its bring-up is finished by the new shard, and
 * the old one stops writing it; a cluster labelled for a shard nobody runs
 * is left alone (and the default shard says so in an Event).
 */
import assert from "node:assert/strict";
import { KUBERNETES_CLUSTERS, type KubernetesCluster } from "../../crds/kubernetescluster.ts";
import { CLUSTER_LABEL, SHARD_LABEL } from "../../core/contract/labels.ts";
import { NIXOS_CONFIGURATIONS, type NixosConfiguration } from "../../core/contract/nio.ts";
import type { Lease } from "../../lib/leader.ts";
import { EVENTS, LEASES } from "../../lib/kube/resources.ts";
import type { KubeClient } from "../../lib/kube/client.ts";
import { eventually } from "../../testing/helpers.ts";
import { type Ledger, startLedger } from "../../testing/ledger.ts";
import { createMachines, machinesDiscovered } from "../../testing/nico.ts";
import { startReplica } from "../../testing/nico_process.ts";
import { world } from "../../testing/world.ts";

/** The pool's Machines get hosts 127.0.85.*: nothing listens there (no workload clusters). */
const BLOCK = 85;
const POOL = Array.from({ length: 8 }, (_, i) => `m-${i + 1}`);
/** Cluster name → the shard it starts in (undefined: the default shard). */
const CLUSTERS: Record<string, string | undefined> = { "a-1": "a", "a-2": "a", "d-1": undefined, "d-2": undefined };
/** Moved from the default shard to shard a during its bring-up. */
const MOVED = "d-1";
const IDENTITY: Record<string, string> = { a: "nico-shard-a", default: "nico-shard-default" };

interface EventLite {
  regarding?: { name?: string };
  reason?: string;
  reportingInstance?: string;
  note?: string;
}

function clusterIn(ns: string, name: string, shard: string | undefined): KubernetesCluster {
  const pool = { machineSelector: { matchLabels: { pool: "edge" } }, count: 1 };
  return {
    metadata: { name, namespace: ns, ...(shard ? { labels: { [SHARD_LABEL]: shard } } : {}) },
    spec: { controlPlane: pool, dataPlane: pool },
  } as unknown as KubernetesCluster;
}

async function eventsOf(client: KubeClient, ns: string): Promise<EventLite[]> {
  return (await client.list<EventLite & { metadata: { name: string } }>(EVENTS, { namespace: ns })).items;
}

/** Each cluster's status and Events come from its own shard; the moved one's from the default, then from a. */
async function writtenByItsShard(client: KubeClient, ns: string, ledger: Ledger): Promise<void> {
  // Each cluster's status names one shard all along, but the moved one's: default, then a, never back.
  for (const name of Object.keys(CLUSTERS)) {
    const want = name === MOVED ? ["default", "a"] : [CLUSTERS[name] ?? "default"];
    assert.deepEqual(ledger.shards.get(name), want, `status.shard of ${name}`);
  }
  // Its Events come from its own shard's replica (the moved one: the default's, then a's, which says so).
  const events = await eventsOf(client, ns);
  for (const name of Object.keys(CLUSTERS)) {
    const from = new Set(events.filter((e) => e.regarding?.name === name).map((e) => e.reportingInstance));
    const want = name === MOVED ? [IDENTITY.default, IDENTITY.a] : [IDENTITY[CLUSTERS[name] ?? "default"]];
    assert.deepEqual([...from].sort(), want.sort(), `Events of ${name}`);
  }
  const moved = events.find((e) => e.regarding?.name === MOVED && e.reason === "ShardChanged");
  assert.equal(moved?.reportingInstance, IDENTITY.a);
  assert.match(moved?.note ?? "", /shard a reconciles this cluster now \(was default\)/);
}

Deno.test("two shards over one Machine pool: no Machine booked twice, each cluster written by its own shard", async () => {
  // Applies of 15 s: the bring-up is still under way when the default shard's first status is read (with 5 s, a
  // quiet machine had it Ready by then).
  await using w = await world("shards", { nio: { applyDelayMs: 15_000 }, nico: false });
  const { cp, ns, client } = w;
  await createMachines(client, ns, POOL, { pool: "edge" }, BLOCK);
  await using ledger = await startLedger(client, ns);
  const a = startReplica(cp.kubeconfigPath, IDENTITY.a!, `${cp.dir}/${ns}-a.log`, ["--shard=a"], ns);
  const d = startReplica(cp.kubeconfigPath, IDENTITY.default!, `${cp.dir}/${ns}-default.log`, [
    "--shard-check-interval=1s",
  ], ns);
  w.defer(() => Promise.all([a.stop(), d.stop()]));

  // One Lease per shard, each held by its own replica.
  const holder = async (name: string) => (await client.get<Lease>(LEASES, name, ns))?.spec?.holderIdentity;
  await eventually(
    "each shard leads on its own Lease",
    async () => (await holder("nico-leader")) === IDENTITY.default && (await holder("nico-leader-a")) === IDENTITY.a,
  );

  await machinesDiscovered(client, ns, POOL);
  for (const [name, shard] of Object.entries(CLUSTERS)) {
    await client.create(KUBERNETES_CLUSTERS, clusterIn(ns, name, shard));
  }
  await client.create(KUBERNETES_CLUSTERS, clusterIn(ns, "lost", "nobody"));

  // Mid bring-up (its configurations exist, it is not Ready yet), the moved cluster changes shard.
  await eventually(
    `${MOVED} has configurations and a status from the default shard`,
    async () =>
      (await client.list<NixosConfiguration>(NIXOS_CONFIGURATIONS, {
          namespace: ns,
          labelSelector: `${CLUSTER_LABEL}=${MOVED}`,
        }))
          .items.length > 0 && !!(await w.cluster(MOVED))?.status?.observedGeneration,
  );
  const before = await w.cluster(MOVED);
  assert.notEqual(before?.status?.phase, "Ready", "the move should happen during the bring-up");
  await client.mergePatch(KUBERNETES_CLUSTERS, MOVED, ns, { metadata: { labels: { [SHARD_LABEL]: "a" } } });

  for (const name of Object.keys(CLUSTERS)) {
    const shard = name === MOVED ? "a" : CLUSTERS[name];
    await w.until(
      `${name} Ready in shard ${shard ?? "default"}`,
      (c) => c.status?.phase === "Ready" && c.status.shard === shard,
      120_000,
      name,
    );
  }

  // The independent check: no Machine ever booked by two clusters, and every Machine of the pool in use.
  assert.deepEqual(ledger.violations, []);
  const claimed = [...ledger.claims.values()].map((h) => h.at(-1));
  assert.equal(claimed.filter((c) => c && c !== "-").length, POOL.length, JSON.stringify([...ledger.claims]));
  assert.ok(ledger.seen.machines! > POOL.length, "the ledger saw the claims happen");

  await writtenByItsShard(client, ns, ledger);
  // How hard they competed: the claim races each shard lost (and selected again).
  const racesIn = async (log: string) =>
    (await Deno.readTextFile(log)).match(/while claiming it for cluster/g)?.length ?? 0;
  const races = [await racesIn(`${cp.dir}/${ns}-a.log`), await racesIn(`${cp.dir}/${ns}-default.log`)];
  console.log(
    `claim races lost: shard a ${races[0]}, default ${races[1]}; Machine versions seen ${ledger.seen.machines}`,
  );

  // Nobody runs shard "nobody": the cluster stays untouched (no finalizer, no status), and no Machine is its.
  const lost = await w.cluster("lost");
  assert.equal(lost?.status, undefined);
  assert.deepEqual(lost?.metadata.finalizers ?? [], []);
  assert.ok(![...ledger.claims.values()].some((h) => h.includes("lost")));
  await eventually(
    "an Event says no NICO runs shard nobody",
    async () =>
      (await eventsOf(client, ns)).find((e) => e.regarding?.name === "lost" && e.reason === "ShardNotRunning"),
  );
});
