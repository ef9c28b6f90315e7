/**
 * A node's (gitRepo, ref) pair is always one that resolved together: moving
 * a cluster to another repository never pairs the new repository with the
 * old one's commit, and a repository that cannot be resolved leaves every
 * node on the pair it had. An informer of its own records every pair any
 * configuration ever carried.
 */
import assert from "node:assert/strict";
import type { KubernetesCluster } from "../../crds/kubernetescluster.ts";
import { KUBERNETES_CLUSTERS } from "../../crds/kubernetescluster.ts";
import { NIXOS_CONFIGURATIONS } from "../../core/contract/nio.ts";
import { Informer } from "../../lib/runtime/informer.ts";
import { silentLogger } from "../../lib/runtime/log.ts";
import type { NixosConfiguration } from "../../core/contract/nio.ts";
import { startGitServer } from "../../testing/git_server.ts";
import { eventually } from "../../testing/helpers.ts";
import { createMachines, machinesDiscovered, settled } from "../../testing/nico.ts";
import { world } from "../../testing/world.ts";

Deno.test("gitRepo changes: every (gitRepo, ref) pair a node ever carries resolved together", async () => {
  await using a = await startGitServer();
  await using b = await startGitServer();
  await using w = await world("pairs", {
    nio: { applyDelayMs: 200 },
    nico: { resolveRefs: true, refPollIntervalMs: 300 },
  });
  const { cp, ns, nico } = w;
  const abort = new AbortController();
  const seen = new Set<string>();
  w.defer(() => abort.abort());
  const aHead = await a.head();
  const bHead = await b.commit("only in b"); // a commit of its own: b's history differs from a's
  await createMachines(cp.client, ns, ["cp-1", "w-1", "w-2"]);
  await machinesDiscovered(cp.client, ns, ["cp-1", "w-1", "w-2"]);
  // An informer records every version of every configuration (it resumes a watch the server ends).
  const watcher = new Informer<NixosConfiguration>(cp.client, NIXOS_CONFIGURATIONS, {
    namespace: ns,
    logger: silentLogger,
  });
  watcher.onEvent((type, cfg) => {
    if (type !== "delete") seen.add(`${cfg.spec.gitRepo} ${cfg.spec.ref}`);
  });
  watcher.start(abort.signal);
  await watcher.synced();
  await cp.client.create(KUBERNETES_CLUSTERS, {
    metadata: { name: "c", namespace: ns },
    spec: { gitRepo: a.url, controlPlane: { machines: ["cp-1"] }, dataPlane: { machines: ["w-1", "w-2"] } },
  } as KubernetesCluster);
  const get = () => cp.client.get<KubernetesCluster>(KUBERNETES_CLUSTERS, "c", ns);
  const pairs = async () =>
    new Set(
      (await cp.client.list<NixosConfiguration>(NIXOS_CONFIGURATIONS, { namespace: ns })).items.map((x) =>
        `${x.spec.gitRepo} ${x.spec.ref}`
      ),
    );
  await eventually("Ready on a", async () => (await get())?.status?.revision === aHead, 60_000);

  await cp.client.mergePatch(KUBERNETES_CLUSTERS, "c", ns, { spec: { gitRepo: b.url } });
  await eventually("every node on b", async () => {
    const p = await pairs();
    return p.size === 1 && p.has(`${b.url} ${bHead}`) && (await get())?.status?.phase === "Ready";
  }, 60_000);

  const missing = b.url.replace(/flake\.git$/, "missing.git");
  await cp.client.mergePatch(KUBERNETES_CLUSTERS, "c", ns, { spec: { gitRepo: missing } });
  const failed = await eventually("ResolveFailed", async () => {
    const c = await get();
    const r = c?.status?.conditions?.find((x) => x.type === "RevisionResolved");
    return r?.reason === "ResolveFailed" ? r : undefined;
  }, 30_000);
  assert.match(failed.message, new RegExp(`nodes stay on ${bHead} of ${b.url.replaceAll(".", "\\.")}`));
  await settled(cp.client, nico, ns, "c"); // one more pass, with the repository still unresolvable
  assert.deepEqual([...await pairs()], [`${b.url} ${bHead}`], "no node moved to the unresolvable repository");

  abort.abort();
  await watcher.stop();
  assert.deepEqual([...seen].sort(), [`${a.url} ${aHead}`, `${b.url} ${bHead}`].sort());
});
