/** One size of the scale benchmark, on a fresh control plane: its phases in order, and the figures. */
import type { SizeResult } from "./result.ts";
import { NAMESPACES } from "../../lib/kube/resources.ts";
import { startControlPlane } from "../../testing/envtest/controlplane.ts";
import { type SimNio } from "../../testing/sim-nio.ts";
import { auditFlags, auditPolicy, type AuditRequest, isWrite, readAudit, tally, within } from "./audit.ts";
import { runCeiling } from "./ceiling.ts";
import { startGitServer } from "./gitserver.ts";
import { Observer } from "./observer.ts";
import { memoryEach, memoryMiB, pidsMatching } from "./procfs.ts";
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
import { Nico, processMemoryMiB, startNicos } from "./nico.ts";
import { checkShards } from "./shards.ts";
import { cacheFootprint, Env, idle, prepare, provision, templates } from "./phases.ts";
import { rollout } from "./rollout.ts";
import type { Templates } from "./ceiling.ts";

// ---------------------------------------------------------------- one size

/** What one size runs until it is torn down: NICO and the simulated NIOs (stopped once measured). */
interface Running {
  nico?: Nico | undefined;
  nios: SimNio[];
}

/** Runs one size on a fresh control plane (provisioning, idle, rollout, ceilings) and answers its figures. */
export async function runSize(opts: Options, size: Size, largest: boolean): Promise<SizeResult> {
  const label = `${size.clusters}x${size.machinesPerCluster}`;
  log(`size ${label}: ${size.clusters * size.machinesPerCluster} machines; starting a control plane`);
  const dir = await Deno.makeTempDir({ prefix: "nico-bench-scale-" });
  if (!opts.keep) tempDirs.add(dir);
  const policy = `${dir}/audit-policy.yaml`;
  const auditPath = `${dir}/audit.log`;
  await Deno.writeTextFile(policy, auditPolicy(NICO_USER));
  const cp = await startControlPlane({ apiserverArgs: auditFlags(policy, auditPath) });
  // The benchmark's own writes wait as long as the API server takes: on a loaded machine one answer after the
  // client's default 30 s would otherwise end the whole run.
  const bench = cp.client.with({ userAgent: "nico-bench", fieldManager: "nico-bench", timeoutMs: 300_000 });
  const observer = new Observer(bench);
  const git = await startGitServer(dir, ["flake", "flake-v2"]);
  const running: Running = { nios: [] };
  try {
    const [apiserver] = await pidsMatching(cp.dir, "kube-apiserver");
    const [etcd] = await pidsMatching(cp.dir, "etcd");
    await observer.start();
    const nico = running.nico = await startNicos(cp, dir, opts);
    const shardPids = Object.fromEntries(nico.pids.slice(1).map((pid, k) => [`nico-s${k + 1}`, pid]));
    const env: Env = {
      cp,
      dir,
      auditPath,
      bench,
      observer,
      nico,
      pids: { nico: nico.pid, ...shardPids, apiserver, etcd, bench: Deno.pid },
      git,
      opts,
    };
    const m = await measure(env, size, largest, running);

    // NICO's requests, from the audit log.
    const audit: AuditRequest[] = await readAudit(auditPath);
    const provTally = tally(within(audit, m.prov.t0, m.prov.tEnd + 1));
    const ceilings = m.tpl && opts.ceiling
      ? await measureCeilings(env, size, m.tpl, provTally, m.prov.result)
      : undefined;
    return sizeResult(label, env, size, m, audit, provTally, ceilings);
  } catch (err) {
    if (running.nico) log(`NICO's log tail:\n${await running.nico.proc.tail(30)}`);
    throw err;
  } finally {
    for (const n of running.nios) await n.stop().catch(() => {});
    await running.nico?.proc.stop();
    await observer.stop();
    await git.stop();
    await cp.stop();
    if (opts.keep) log(`kept ${dir} (nico.log, audit.log)`);
    else await Deno.remove(dir, { recursive: true }).catch(() => {});
    tempDirs.delete(dir);
  }
}

/** What one size measured with NICO running: provisioning, idle, the rollout (largest size), memory. */
async function measure(env: Env, size: Size, largest: boolean, running: Running) {
  const { opts, observer, bench, nico } = env;
  const baseline = await memoryMiB(nico.pid);
  const prep = await prepare(env, "scale", size, 0);
  running.nios = prep.nios;
  log(`provisioning ${size.clusters} clusters`);
  const prov = await provision(env, size, prep.nss, prep.placement);
  const p = prov.result;
  log(
    `  configurations ${p.allConfigurationsSeconds} s, Ready ${p.allReadySeconds} s; NICO reconcile mean ${p.nicoController.reconcileMeanMs} ms`,
  );
  log(`idle: ${opts.idleSeconds} s`);
  const idleResult = await idle(env);
  const memAfterIdle = await memoryMiB(nico.pid);
  const shardMemory = await memoryEach(nico.pids);
  const kinds = (await nico.metricsEach()).map(processMemoryMiB);
  const shards = opts.shards > 1 ? await checkShards(bench, prep.nss, opts.shards) : undefined;
  if (shards) {
    log(
      `  shards: ${
        JSON.stringify(shards.clustersByShard)
      }; misplaced ${shards.misplaced.length}, double-booked ${shards.doubleBooked.length}`,
    );
  }
  const cached = await cacheFootprint(bench);
  let rolloutResult: Awaited<ReturnType<typeof rollout>> | undefined;
  if (largest && opts.rolloutClusters > 0) {
    rolloutResult = await rollout(env, size.machinesPerCluster);
    log(`  rollout ${rolloutResult.seconds} s (minimum ${rolloutResult.minimumSeconds} s)`);
  }
  const memEnd = await memoryMiB(nico.pid);

  const readyOne = prep.placement.find((c) => observer.clusters.get(`${c.ns}/${c.name}`)?.ready.size);
  const tpl = readyOne ? await templates(bench, readyOne.ns, readyOne.name) : undefined;
  for (const n of running.nios) await n.stop();
  running.nios = [];
  await nico.proc.stop();
  return {
    prov,
    idleResult,
    rolloutResult,
    tpl,
    shards,
    memory: { baseline, memAfterIdle, memEnd, cached, shardMemory, kinds },
  };
}

type Measured = Awaited<ReturnType<typeof measure>>;
type Tally = ReturnType<typeof tally>;

/**
 * The ceiling: same control plane, NICO and NIO stopped, namespaces of its own. Then the same with
 * NICO's extra requests added, and with every extra request of the run added (the simulator's too).
 */
async function measureCeilings(
  env: Env,
  size: Size,
  tpl: Templates,
  provTally: Tally,
  p: Measured["prov"]["result"],
) {
  log(`ceiling: ${size.clusters} clusters, ${env.opts.concurrency} requests in flight`);
  const ceiling = await ceilingIn(env, size, tpl, "ceiling", {});
  const base = ceiling.apiserver.byVerbResource;
  const minus = (counts: Record<string, number>) =>
    Object.fromEntries(
      Object.entries(counts).map(([k, v]): [string, number] => [k, v - (base[k] ?? 0)]).filter(([, v]) => v > 0),
    );
  const nicoCounts = Object.fromEntries(
    Object.entries(provTally.byVerbResource).map(([k, v]) => [httpVerb(k), v]),
  );
  const withNicoExtras = await ceilingIn(env, size, tpl, "ceiling-nico", minus(nicoCounts));
  const runCounts = Object.fromEntries(
    Object.entries(p.apiserver.byVerbResource).filter(([k]) =>
      !/^(WATCH|LIST) /.test(k) && k !== "PUT leases" && k !== "POST kubernetesclusters"
    ),
  );
  const withAllExtras = await ceilingIn(env, size, tpl, "ceiling-all", minus(runCounts));
  return { ceiling, withNicoExtras, withAllExtras };
}

/** One ceiling run in namespace `ns`: the same Machines, and the clusters' objects replayed with `extras`. */
async function ceilingIn(env: Env, size: Size, tpl: Templates, ns: string, extras: Record<string, number>) {
  const { bench, opts, git } = env;
  const cpuPids = { apiserver: env.pids.apiserver, etcd: env.pids.etcd, bench: Deno.pid };
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
    tpl,
    opts.concurrency,
    extras,
  );
  const c1 = await cpuOf(cpuPids);
  const work = apiserverWork(a0, await apiserverMetrics(bench), size.clusters);
  log(`  ${ns}: ${c.seconds.toFixed(2)} s for ${c.requests} requests`);
  return { ...c, seconds: round(c.seconds, 2), cpu: cpuDelta(c0, c1, c.seconds), apiserver: work };
}

/** The figures of one size, as the report shows them. */
function sizeResult(
  label: string,
  env: Env,
  size: Size,
  m: Measured,
  audit: AuditRequest[],
  provTally: Tally,
  ceilings: Awaited<ReturnType<typeof measureCeilings>> | undefined,
): SizeResult {
  const { opts } = env;
  const { prov, idleResult, rolloutResult, memory } = m;
  const p = prov.result;
  const perCluster = Object.fromEntries(
    Object.entries(provTally.byVerbResource).map(([k, v]) => [k, round(v / size.clusters, 2)]),
  );
  const settleReqs = within(audit, prov.tEnd + 1, idleResult.t0);
  const idleReqs = within(audit, idleResult.t0, idleResult.t1);
  const idleTally = tally(idleReqs);
  const rolloutTally = rolloutResult
    ? tally(within(audit, rolloutResult.window.from, rolloutResult.window.to + 1))
    : undefined;
  const ready = p.allReadySeconds;
  const ceiling = ceilings?.ceiling;
  return {
    size: label,
    machines: size.clusters * size.machinesPerCluster,
    layout: { controlPlane: opts.cp, workers: size.machinesPerCluster - opts.cp },
    provisioning: p,
    ceiling: ceiling
      ? {
        ...ceiling,
        withNicoExtras: ceilings.withNicoExtras ?? null,
        withAllExtras: ceilings.withAllExtras ?? null,
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
      baselineRssMiB: memory.baseline ? round(memory.baseline.rss, 1) : null,
      peakRssMiB: memory.memEnd ? round(memory.memEnd.hwm, 1) : null,
      peakRssBeforeRolloutMiB: memory.memAfterIdle ? round(memory.memAfterIdle.hwm, 1) : null,
      rssAfterIdleMiB: memory.memAfterIdle ? round(memory.memAfterIdle.rss, 1) : null,
      peakRssPerShardMiB: memory.shardMemory.map((m) => (m ? round(m.hwm, 1) : null)),
      afterIdleByKindMiB: memory.kinds,
      cachedObjects: memory.cached,
    },
    shards: m.shards ?? null,
    rollout: rolloutResult ? { ...rolloutResult, window: undefined } : null,
  };
}
