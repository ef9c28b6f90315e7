/**
 * What GitOps tools read from a live KubernetesCluster: every version of the
 * cluster an independent watch sees goes through the real kstatus library,
 * the shipped Flux health expressions (cel-go) and the shipped Argo CD health
 * script (gopher-lua), through a first bring-up, a gitRepo change, a halted
 * rollout of a new commit, a pause, and each settle. No reader may call the
 * cluster done between a change and the first node that moved for it.
 */
import assert from "node:assert/strict";
import type { KubernetesCluster } from "../../crds/kubernetescluster.ts";
import { KUBERNETES_CLUSTERS } from "../../crds/kubernetescluster.ts";
import { NIXOS_CONFIGURATIONS } from "../../core/contract/nio.ts";
import type { NixosConfiguration } from "../../core/contract/nio.ts";
import type { KubeClient, KubeObject } from "../../lib/kube/client.ts";
import type { Resource } from "../../lib/kube/resources.ts";
import { Informer } from "../../lib/runtime/informer.ts";
import { silentLogger } from "../../lib/runtime/log.ts";
import { type GitServer, startGitServer } from "../../testing/git_server.ts";
import {
  type GitopsCheck,
  type Recipes,
  shippedRecipes,
  startGitopsCheck,
  type Verdicts,
} from "../../testing/gitops.ts";
import { eventually } from "../../testing/helpers.ts";
import { createMachines, machinesDiscovered } from "../../testing/nico.ts";
import { FAIL_APPLY_ANNOTATION } from "../../testing/sim-nio.ts";
import { type World, world } from "../../testing/world.ts";
import { STATUS_DELAY_MS } from "../../core/status/write.ts";

/** Every version of every object of `r` in `ns` an informer sees (it resumes a watch the server ends), with its
 * resourceVersion as a number (one etcd: one order). */
function record<T extends KubeObject>(
  client: KubeClient,
  r: Resource,
  ns: string,
  onEvent: (o: T, rv: number) => void,
) {
  const informer = new Informer<T>(client, r, { namespace: ns, logger: silentLogger, resyncMs: 0 });
  informer.onEvent((type, o) => {
    if (type !== "delete") onEvent(o, Number(o.metadata.resourceVersion));
  });
  informer.start();
  return { synced: () => informer.synced(), stop: () => informer.stop() };
}

interface Seen {
  rv: number;
  cluster: KubernetesCluster;
  v: Verdicts;
}

const cond = (c: KubernetesCluster, type: string) => c.status?.conditions?.find((x) => x.type === type);
const show = (s: Seen) =>
  `rv ${s.rv} gen ${s.cluster.metadata.generation}/${s.cluster.status?.observedGeneration} ` +
  `phase ${s.cluster.status?.phase}: kstatus ${s.v.kstatus.status ?? s.v.kstatus.error} ` +
  `flux ${s.v.flux?.status ?? s.v.flux?.error} argo ${s.v.argo?.status ?? s.v.argo?.error} ` +
  `[${(s.cluster.status?.conditions ?? []).map((c) => `${c.type}=${c.status}/${c.reason}`).join(" ")}]`;

/** The three readers agree on one word each: kstatus and Flux say `k`, Argo CD says `argo`. */
function says(s: Seen, k: "InProgress" | "Failed" | "Current", argo: string): boolean {
  return s.v.kstatus.status === k && s.v.flux?.status === k && s.v.argo?.status === argo;
}

/**
 * What the three readers said of every version of cluster `c` in `w`'s namespace, and which node moved to which
 * (gitRepo, ref) pair when; stopped with `w`.
 */
async function readings(w: World, check: GitopsCheck, recipes: Recipes) {
  const { cp, ns } = w;
  const seen: Seen[] = [];
  const moves: { rv: number; machine: string; pair: string }[] = [];
  let reading = Promise.resolve();
  const clusters = record<KubernetesCluster>(cp.client, KUBERNETES_CLUSTERS, ns, (c, rv) => {
    reading = reading.then(async () => void seen.push({ rv, cluster: c, v: await check.read(c, recipes) }));
  });
  const configs = record<NixosConfiguration>(cp.client, NIXOS_CONFIGURATIONS, ns, (c, rv) => {
    const pair = `${c.spec.gitRepo} ${c.spec.ref}`;
    const last = moves.findLast((m) => m.machine === c.spec.machineRef.name);
    if (last?.pair !== pair) moves.push({ rv, machine: c.spec.machineRef.name, pair });
  });
  w.defer(async () => {
    await clusters.stop();
    await configs.stop();
    await reading.catch(() => {});
  });
  await clusters.synced();
  await configs.synced();
  return {
    seen,
    moves,
    /** Every version seen so far has been read. */
    read: () => reading,
    /** Waits for a version after `from`, with a status, that `pred` accepts; answers it. (Before NICO's first
     * status write kstatus reads any object as Current: nothing NICO writes can change that.) */
    async until(what: string, from: number, pred: (s: Seen) => boolean, timeoutMs = 60_000) {
      try {
        return await eventually(what, async () => {
          await reading;
          return seen.find((s) => s.rv > from && s.cluster.status?.conditions && pred(s));
        }, timeoutMs);
      } catch (err) {
        throw new Error(`${(err as Error).message}\n${seen.filter((s) => s.rv > from).map(show).join("\n")}`);
      }
    },
    /** Between `from` and the first node moved to `pair`, no reader calls the cluster done. */
    neverDoneBeforeMove(from: number, pair: string) {
      const moved = moves.find((m) => m.rv > from && m.pair === pair);
      assert.ok(moved, `no node moved to ${pair}`);
      const early = seen.filter((s) => s.rv > from && s.rv < moved.rv);
      for (const s of early) {
        assert.ok(
          s.v.kstatus.status !== "Current" && s.v.flux?.status !== "Current" && s.v.argo?.status !== "Healthy",
          `done before ${moved.machine} moved to ${pair}: ${show(s)}`,
        );
      }
    },
  };
}
type Readings = Awaited<ReturnType<typeof readings>>;

/** First bring-up on `a`: in progress until every node is up; answers the Current version. */
async function bringUp(w: World, r: Readings, a: GitServer): Promise<Seen> {
  const aHead = await a.head();
  await createMachines(w.client, w.ns, ["cp-1", "w-1", "w-2"]);
  await machinesDiscovered(w.client, w.ns, ["cp-1", "w-1", "w-2"]);
  const created = await w.client.create<KubernetesCluster>(KUBERNETES_CLUSTERS, {
    metadata: { name: "c", namespace: w.ns },
    spec: {
      gitRepo: a.url,
      controlPlane: { machines: ["cp-1"] },
      dataPlane: { machines: ["w-1", "w-2"] },
      rollout: { nodeTimeout: "20s" },
    },
  } as KubernetesCluster);
  const start = Number(created.metadata.resourceVersion);
  const up = await r.until("Current after the bring-up", start, (s) => says(s, "Current", "Healthy"));
  assert.equal(up.cluster.status?.revision, aHead);
  assert.equal(up.cluster.status?.dataPlane?.ready, 2);
  const early = r.seen.filter((s) => s.rv > start && s.rv < up.rv && s.cluster.status?.conditions);
  assert.ok(early.length > 0, "no status before Ready");
  for (const s of early) assert.ok(says(s, "InProgress", "Progressing"), show(s));
  return up;
}

/** A gitRepo change to `b` (at `bHead`): not done before a node moved to b's commit, then done on b. */
async function gitRepoChange(w: World, r: Readings, b: GitServer, bHead: string): Promise<void> {
  const patched = await w.client.mergePatch<KubernetesCluster>(KUBERNETES_CLUSTERS, "c", w.ns, {
    spec: { gitRepo: b.url },
  });
  const changed = Number(patched.metadata.resourceVersion);
  const onB = await r.until(
    "Current on b",
    changed,
    (s) =>
      says(s, "Current", "Healthy") && s.cluster.status?.revision === bHead &&
      s.cluster.status?.observedGeneration === patched.metadata.generation,
  );
  r.neverDoneBeforeMove(changed, `${b.url} ${bHead}`);
  const rolling = r.seen.filter((s) => s.rv > changed && s.rv < onB.rv);
  assert.ok(
    rolling.length > 0 && rolling.every((s) => says(s, "InProgress", "Progressing")),
    rolling.map(show).join("\n"),
  );
  assert.ok(
    !rolling.some((s) =>
      s.cluster.status?.observedGeneration === patched.metadata.generation &&
      cond(s.cluster, "UpToDate")?.status === "True"
    ),
    "the new generation was reported up to date before the rollout",
  );
}

/** A new commit that w-1 fails to apply: Failed while halted, Current once it recovers; answers that version. */
async function haltAndRecover(w: World, r: Readings, b: GitServer): Promise<Seen> {
  await w.client.mergePatch(NIXOS_CONFIGURATIONS, "c.w-1", w.ns, {
    metadata: { annotations: { [FAIL_APPLY_ANNOTATION]: "true" } },
  });
  await r.read();
  const beforeCommit = r.seen.at(-1)!.rv;
  const second = await b.commit("second");
  const halted = await r.until("Failed at w-1", beforeCommit, (s) => says(s, "Failed", "Degraded"), 60_000);
  assert.match(cond(halted.cluster, "Stalled")?.message ?? "", /w-1/);
  r.neverDoneBeforeMove(beforeCommit, `${b.url} ${second}`);
  await w.client.mergePatch(NIXOS_CONFIGURATIONS, "c.w-1", w.ns, {
    metadata: { annotations: { [FAIL_APPLY_ANNOTATION]: null } },
  });
  const recovered = await r.until(
    "Current on the second commit",
    halted.rv,
    (s) =>
      says(s, "Current", "Healthy") && s.cluster.status?.revision === second &&
      s.cluster.status?.rollout?.upToDate === 3,
  );
  assert.ok(r.moves.filter((m) => m.rv > halted.rv).length >= 2, "the rollout went on after w-1 recovered");
  return recovered;
}

/** Paused with a change waiting: in progress for kstatus and Flux, Suspended for Argo CD; Current once unpaused. */
async function pausedWithAChange(w: World, r: Readings, b: GitServer, from: Seen): Promise<void> {
  await w.client.mergePatch(KUBERNETES_CLUSTERS, "c", w.ns, {
    metadata: { annotations: { "nico.homystack.com/paused": "true" } },
  });
  await r.read();
  const third = await b.commit("third");
  const paused = await r.until("Suspended", from.rv, (s) => says(s, "InProgress", "Suspended"));
  assert.equal(cond(paused.cluster, "Paused")?.status, "True");
  await w.client.mergePatch(KUBERNETES_CLUSTERS, "c", w.ns, {
    metadata: { annotations: { "nico.homystack.com/paused": null } },
  });
  await r.until(
    "Current on the third commit",
    paused.rv,
    (s) =>
      says(s, "Current", "Healthy") && s.cluster.status?.revision === third &&
      s.cluster.status?.rollout?.upToDate === 3,
  );
}

Deno.test({
  name: "kstatus, Flux and Argo CD read InProgress through changes, Failed on a halt, Current when settled",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await using a = await startGitServer();
    await using b = await startGitServer();
    const check = await startGitopsCheck();
    const recipes: Recipes = await shippedRecipes();
    await using w = await world("gitops", {
      nio: { applyDelayMs: 300 },
      // NICO's own status delay: the readers see the versions a real NICO writes.
      nico: { resolveRefs: true, refPollIntervalMs: 300, statusDelayMs: STATUS_DELAY_MS },
    });
    w.defer(() => check.close());
    const r = await readings(w, check, recipes);
    const bHead = await b.commit("only in b"); // a commit of its own: b's history differs from a's
    await bringUp(w, r, a);
    await gitRepoChange(w, r, b, bHead);
    const recovered = await haltAndRecover(w, r, b);
    await pausedWithAChange(w, r, b, recovered);
  },
});
