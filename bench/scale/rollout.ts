/** The rollout phase of the largest size: a gitRepo change through every cluster, timed step by step. */
import type { RolloutFigures } from "./result.ts";
import type { KubernetesCluster } from "../../crds/kubernetescluster.ts";
import { KUBERNETES_CLUSTERS } from "../../crds/kubernetescluster.ts";
import { type Observer, until } from "./observer.ts";
import { forEachLimited } from "./pool.ts";
import { createClusters, dist, log, round, secs } from "./util.ts";
import { type Env, prepare } from "./phases.ts";

/** Provisions `opts.rolloutClusters` clusters with the apply delay, then rolls a new gitRepo through them all. */
export async function rollout(
  env: Env,
  machinesPerCluster: number,
): Promise<RolloutFigures & { window: { from: number; to: number } }> {
  const { bench, observer, opts } = env;
  const size = { clusters: opts.rolloutClusters, machinesPerCluster };
  log(`rollout: ${size.clusters} clusters of ${machinesPerCluster}, simulated apply ${opts.rolloutApplyMs} ms`);
  const { nss, placement, nios } = await prepare(env, "rollout", size, opts.rolloutApplyMs);
  try {
    const workers = machinesPerCluster - opts.cp;
    const d = opts.rolloutApplyMs;
    // Provisioning with the apply delay: bootstrap first, then the other control-plane nodes one at a time;
    // workers start as soon as the bootstrap node is up, so they overlap the control plane.
    const provisionSteps = Math.max(opts.cp, workers > 0 ? 2 : 1);
    const t0 = Date.now();
    await createClusters(bench, placement, machinesPerCluster, opts.cp, env.git.url("flake"), opts.concurrency);
    const timeout = opts.timeoutSeconds * 1000;
    const provisioned = await until(
      () => observer.clustersIn(nss).filter(([, c]) => c.ready.size > 0).length >= size.clusters,
      timeout,
    );
    if (!provisioned) throw new Error("rollout clusters did not become Ready");
    const tProv = Math.max(...observer.clustersIn(nss).map(([, c]) => Math.min(...c.ready.values())));
    await new Promise((r) => setTimeout(r, 1000));

    // The change: a new gitRepo on every cluster at once.
    const newRepo = env.git.url("flake-v2");
    const gens = new Map<string, number>();
    const r0 = Date.now();
    await forEachLimited(placement, opts.concurrency, async ({ ns, name }) => {
      const c = await bench.mergePatch<KubernetesCluster>(KUBERNETES_CLUSTERS, name, ns, {
        spec: { gitRepo: newRepo },
      });
      gens.set(`${ns}/${name}`, c.metadata.generation ?? 0);
    });
    const done = () =>
      [...gens.entries()].every(([k, g]) => observer.clusters.get(k)?.ready.has(g)) &&
      observer.configsIn(nss).every((c) => c.gitRepo === newRepo && c.applied.has(c.generation));
    const ok = await until(done, timeout, () => {
      const n = [...gens.entries()].filter(([k, g]) => observer.clusters.get(k)?.ready.has(g)).length;
      log(`  ${secs(Date.now() - r0)} s: ${n}/${gens.size} clusters rolled out`);
    });
    const tDone = ok ? Math.max(...[...gens.entries()].map(([k, g]) => observer.clusters.get(k)!.ready.get(g)!)) : NaN;
    const { reaction, nioLag, perCluster } = stepTimes(observer, nss, gens, r0, d);
    const steps = workers + opts.cp; // maxUnavailable 1: workers one at a time, then the control plane one at a time
    return {
      clusters: size.clusters,
      machinesPerCluster,
      applyMs: d,
      provisioning: {
        seconds: secs(tProv - t0),
        minimumSeconds: secs(provisionSteps * d),
        steps: provisionSteps,
      },
      complete: ok,
      seconds: ok ? secs(tDone - r0) : null,
      minimumSeconds: secs(steps * d),
      sequentialSteps: steps,
      ratio: ok ? round((tDone - r0) / (steps * d), 2) : null,
      overheadPerStepSeconds: ok ? round((tDone - r0 - steps * d) / steps / 1000, 3) : null,
      clusterSeconds: dist(perCluster),
      /** Previous node applied (or the spec change) → NICO updates the next node's configuration. */
      nicoReactionSeconds: dist(reaction),
      /** Configuration updated → applied, minus the apply delay: the simulated NIO's own latency. */
      nioLatencySeconds: dist(nioLag),
      window: { from: r0, to: ok ? tDone : Date.now() },
    };
  } finally {
    for (const n of nios) await n.stop();
  }
}

/**
 * Steps per cluster, from the configurations' generations: updated (spec changed) → applied. `gens` holds
 * each cluster's generation after the change, `r0` when it was made, `d` the apply delay.
 */
function stepTimes(observer: Observer, nss: Set<string>, gens: Map<string, number>, r0: number, d: number) {
  const reaction: number[] = [];
  const nioLag: number[] = [];
  const perCluster: number[] = [];
  const cfgs = observer.configsIn(nss);
  for (const [k, g] of gens) {
    const steps = cfgs.filter((c) => c.cluster === k && c.generation >= 2).map((c) => ({
      updated: c.genSeen.get(c.generation)!,
      applied: c.applied.get(c.generation),
    })).sort((a, b) => a.updated - b.updated);
    if (steps.some((s) => s.applied === undefined)) continue;
    let prev = r0;
    for (const s of steps) {
      reaction.push(s.updated - prev);
      nioLag.push(s.applied! - s.updated - d);
      prev = s.applied!;
    }
    const ready = observer.clusters.get(k)?.ready.get(g);
    if (ready !== undefined) perCluster.push(ready - r0);
  }
  return { reaction, nioLag, perCluster };
}
