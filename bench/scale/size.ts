/** One size of the scale benchmark, on a fresh control plane: its phases in order, and the figures. */
import type { SizeResult } from "./result.ts";
import { NAMESPACES } from "../../lib/kube/resources.ts";
import { startControlPlane } from "../../testing/envtest/controlplane.ts";
import { type SimNio } from "../../testing/sim-nio.ts";
import { auditFlags, auditPolicy, type AuditRequest, isWrite, readAudit, tally, within } from "./audit.ts";
import { runCeiling } from "./ceiling.ts";
import { startGitServer } from "./gitserver.ts";
import { Observer } from "./observer.ts";
import { memoryMiB, pidsMatching } from "./procfs.ts";
import { Options, Size } from "./options.ts";
import {
  apiserverMetrics,
  apiserverWork,
  clusterName,
  clusterSpec,
  cpuDelta,
  cpuOf,
  createMachines,
  httpVerb,
  log,
  machineNames,
  NICO_USER,
  round,
  tempDirs,
} from "./util.ts";
import { Nico, startNico } from "./nico.ts";
import { cacheFootprint, Env, idle, prepare, provision, rollout, templates } from "./phases.ts";

// ---------------------------------------------------------------- one size

export async function runSize(opts: Options, size: Size, largest: boolean): Promise<SizeResult> {
  const label = `${size.clusters}x${size.machinesPerCluster}`;
  log(`size ${label}: ${size.clusters * size.machinesPerCluster} machines; starting a control plane`);
  const dir = await Deno.makeTempDir({ prefix: "nico-bench-scale-" });
  if (!opts.keep) tempDirs.add(dir);
  const policy = `${dir}/audit-policy.yaml`;
  const auditPath = `${dir}/audit.log`;
  await Deno.writeTextFile(policy, auditPolicy(NICO_USER));
  const cp = await startControlPlane({ apiserverArgs: auditFlags(policy, auditPath) });
  const bench = cp.client.with({ userAgent: "nico-bench", fieldManager: "nico-bench" });
  const observer = new Observer(bench);
  const git = await startGitServer(dir, ["flake", "flake-v2"]);
  let nico: Nico | undefined;
  let nios: SimNio[] = [];
  try {
    const [apiserver] = await pidsMatching(cp.dir, "kube-apiserver");
    const [etcd] = await pidsMatching(cp.dir, "etcd");
    await observer.start();
    nico = await startNico(cp, dir, opts);
    const baseline = await memoryMiB(nico.pid);
    const env: Env = {
      cp,
      dir,
      auditPath,
      bench,
      observer,
      nico,
      pids: { nico: nico.pid, apiserver, etcd, bench: Deno.pid },
      git,
      opts,
    };
    const prep = await prepare(env, "scale", size, 0);
    nios = prep.nios;
    log(`provisioning ${size.clusters} clusters`);
    const prov = await provision(env, size, prep.nss, prep.placement);
    const p = prov.result;
    log(
      `  configurations ${p.allConfigurationsSeconds} s, Ready ${p.allReadySeconds} s; NICO reconcile mean ${p.nicoController.reconcileMeanMs} ms`,
    );
    log(`idle: ${opts.idleSeconds} s`);
    const idleResult = await idle(env);
    const memAfterIdle = await memoryMiB(nico.pid);
    const cached = await cacheFootprint(bench);
    let rolloutResult: Awaited<ReturnType<typeof rollout>> | undefined;
    if (largest && opts.rolloutClusters > 0) {
      rolloutResult = await rollout(env, size.machinesPerCluster);
      log(`  rollout ${rolloutResult.seconds} s (minimum ${rolloutResult.minimumSeconds} s)`);
    }
    const memEnd = await memoryMiB(nico.pid);

    const readyOne = prep.placement.find((c) => observer.clusters.get(`${c.ns}/${c.name}`)?.ready.size);
    const tpl = readyOne ? await templates(bench, readyOne.ns, readyOne.name) : undefined;
    for (const n of nios) await n.stop();
    nios = [];
    await nico.proc.stop();

    // NICO's requests, from the audit log.
    const audit: AuditRequest[] = await readAudit(auditPath);
    const provReqs = within(audit, prov.t0, prov.tEnd + 1);
    const provTally = tally(provReqs);
    const perCluster = Object.fromEntries(
      Object.entries(provTally.byVerbResource).map(([k, v]) => [k, round(v / size.clusters, 2)]),
    );

    // The ceiling: same control plane, NICO and NIO stopped, namespaces of its own. Then the same with
    // NICO's extra requests added, and with every extra request of the run added (the simulator's too).
    const cpuPids = { apiserver: env.pids.apiserver, etcd: env.pids.etcd, bench: Deno.pid };
    const ceilingIn = async (ns: string, extras: Record<string, number>) => {
      await bench.create(NAMESPACES, { metadata: { name: ns } });
      const names = Array.from(
        { length: size.clusters },
        (_, i) => machineNames(clusterName(i), size.machinesPerCluster),
      );
      await createMachines(bench, ns, names.flat(), opts.concurrency);
      const c0 = await cpuOf(cpuPids);
      const a0 = await apiserverMetrics(bench);
      const c = await runCeiling(
        bench,
        ns,
        size.clusters,
        (i) => names[i]!,
        clusterName,
        (n) => clusterSpec(n, opts.cp, git.url("flake")),
        tpl!,
        opts.concurrency,
        extras,
      );
      const c1 = await cpuOf(cpuPids);
      const work = apiserverWork(a0, await apiserverMetrics(bench), size.clusters);
      log(`  ${ns}: ${c.seconds.toFixed(2)} s for ${c.requests} requests`);
      return { ...c, seconds: round(c.seconds, 2), cpu: cpuDelta(c0, c1, c.seconds), apiserver: work };
    };
    let ceiling: Awaited<ReturnType<typeof ceilingIn>> | undefined;
    let withNicoExtras: Awaited<ReturnType<typeof ceilingIn>> | undefined;
    let withAllExtras: Awaited<ReturnType<typeof ceilingIn>> | undefined;
    if (tpl) {
      log(`ceiling: ${size.clusters} clusters, ${opts.concurrency} requests in flight`);
      ceiling = await ceilingIn("ceiling", {});
      const base = ceiling.apiserver.byVerbResource;
      const minus = (counts: Record<string, number>) =>
        Object.fromEntries(
          Object.entries(counts).map(([k, v]): [string, number] => [k, v - (base[k] ?? 0)]).filter(([, v]) => v > 0),
        );
      const nicoCounts = Object.fromEntries(
        Object.entries(provTally.byVerbResource).map(([k, v]) => [httpVerb(k), v]),
      );
      withNicoExtras = await ceilingIn("ceiling-nico", minus(nicoCounts));
      const runCounts = Object.fromEntries(
        Object.entries(p.apiserver.byVerbResource).filter(([k]) =>
          !/^(WATCH|LIST) /.test(k) && k !== "PUT leases" && k !== "POST kubernetesclusters"
        ),
      );
      withAllExtras = await ceilingIn("ceiling-all", minus(runCounts));
    }

    const settleReqs = within(audit, prov.tEnd + 1, idleResult.t0);
    const idleReqs = within(audit, idleResult.t0, idleResult.t1);
    const idleTally = tally(idleReqs);
    const rolloutTally = rolloutResult
      ? tally(within(audit, rolloutResult.window.from, rolloutResult.window.to + 1))
      : undefined;

    const ready = p.allReadySeconds;
    return {
      size: label,
      machines: size.clusters * size.machinesPerCluster,
      layout: { controlPlane: opts.cp, workers: size.machinesPerCluster - opts.cp },
      provisioning: p,
      ceiling: ceiling
        ? {
          ...ceiling,
          withNicoExtras: withNicoExtras ?? null,
          withAllExtras: withAllExtras ?? null,
          ratioReady: ready !== null ? round(ready / ceiling.seconds, 2) : null,
          ratioConfigurations: p.allConfigurationsSeconds !== null
            ? round(p.allConfigurationsSeconds / ceiling.seconds, 2)
            : null,
        }
        : null,
      api: {
        provisioning: {
          requests: provTally.total,
          writes: provTally.writes,
          errors: provTally.errors,
          requestsPerCluster: round(provTally.total / size.clusters, 2),
          writesPerCluster: round(provTally.writes / size.clusters, 2),
          byVerbResource: provTally.byVerbResource,
          perCluster,
          errorCodes: provTally.errorCodes,
        },
        afterReady: { seconds: idleResult.settleSeconds, ...tally(settleReqs) },
        idle: {
          ...idleTally,
          writeRequests: idleReqs.filter(isWrite).map((r) => `${r.verb} ${r.resource} ${r.code}`).slice(0, 20),
        },
        rollout: rolloutTally ?? null,
      },
      idle: {
        seconds: idleResult.seconds,
        writes: idleTally.writes,
        requests: idleTally.total,
        reconciles: idleResult.reconciles,
        nicoCpuSeconds: idleResult.nicoCpuSeconds,
        nicoCpuPercent: idleResult.nicoCpuPercent,
        nicoCpuPer10sSlice: idleResult.nicoCpuPer10sSlice,
        settleSeconds: idleResult.settleSeconds,
      },
      memory: {
        baselineRssMiB: baseline ? round(baseline.rss, 1) : null,
        peakRssMiB: memEnd ? round(memEnd.hwm, 1) : null,
        peakRssBeforeRolloutMiB: memAfterIdle ? round(memAfterIdle.hwm, 1) : null,
        rssAfterIdleMiB: memAfterIdle ? round(memAfterIdle.rss, 1) : null,
        cachedObjects: cached,
      },
      rollout: rolloutResult ? { ...rolloutResult, window: undefined } : null,
    };
  } catch (err) {
    if (nico) log(`NICO's log tail:\n${await nico.proc.tail(30)}`);
    throw err;
  } finally {
    for (const n of nios) await n.stop().catch(() => {});
    await nico?.proc.stop();
    await observer.stop();
    await git.stop();
    await cp.stop();
    if (opts.keep) log(`kept ${dir} (nico.log, audit.log)`);
    else await Deno.remove(dir, { recursive: true }).catch(() => {});
    tempDirs.delete(dir);
  }
}
