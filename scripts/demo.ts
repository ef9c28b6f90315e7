/**
 * `deno task demo`: NICO's main job on a local default. Starts a real
 * control plane, installs NICO's and NIO's CRDs, runs the simulated NIO and
 * NICO itself (`main.ts run`), creates sample Machines and a cluster, shows
 * progress until Ready, runs `kubectl get nodes` with the kubeconfig NICO
 * published, shows a refused `kubectl apply`, shows etcd as NICO sees it
 * and a backup NICO takes to a local S3-compatible store (listed with
 * `nico backups`), deletes the cluster and cleans up.
 *
 * @module
 */
import { startNicoProcess } from "../testing/nico_process.ts";
import type { KubernetesCluster } from "../crds/kubernetescluster.ts";
import { SECRETS } from "../lib/kube/resources.ts";
import { KUBERNETES_CLUSTERS } from "../crds/kubernetescluster.ts";
import { NIXOS_CONFIGURATIONS } from "../core/contract/nio.ts";
import type { NixosConfiguration } from "../core/contract/nio.ts";
import { type ControlPlane, startControlPlane } from "../testing/envtest/controlplane.ts";
import { freePort, type Guarded } from "../testing/envtest/process.ts";
import { type SimNio, startSimNio } from "../testing/sim-nio.ts";
import { type WorkloadClusters, workloadClusters } from "../testing/workload.ts";
import { showEtcdBackup } from "./demo_backup.ts";

const ROOT = new URL("../", import.meta.url).pathname;
const NS = "demo";
const tty = Deno.stdout.isTerminal();
const bold = (s: string) => (tty ? `\x1b[1m${s}\x1b[0m` : s);
const dim = (s: string) => (tty ? `\x1b[2m${s}\x1b[0m` : s);
const step = (s: string) => console.log(`\n${bold("==>")} ${bold(s)}`);

async function kubectl(
  cp: ControlPlane,
  args: string[],
  opts: { stdin?: string; kubeconfig?: string; quiet?: boolean } = {},
) {
  const r = await cp.kubectl(args, opts);
  if (!opts.quiet) {
    console.log(dim(`$ kubectl ${args.join(" ")}`));
    if (r.stdout.trim()) console.log(r.stdout.trimEnd());
    if (r.stderr.trim()) console.log(r.stderr.trimEnd());
  }
  return r;
}

/** A compact table of the cluster and its nodes; redrawn in place on a terminal. */
function renderTable(c: KubernetesCluster | undefined, cfgs: NixosConfiguration[]): string[] {
  if (!c) return ["(no cluster)"];
  const s = c.status;
  const lines = [
    `${"CLUSTER".padEnd(8)} ${"PHASE".padEnd(13)} ${"CONTROL PLANE".padEnd(14)} WORKERS`,
    `${c.metadata.name.padEnd(8)} ${(s?.phase ?? "-").padEnd(13)} ${(s?.controlPlane?.summary ?? "-").padEnd(14)} ${
      s?.dataPlane?.summary ?? "-"
    }`,
  ];
  for (const cfg of [...cfgs].sort((a, b) => a.metadata.name.localeCompare(b.metadata.name))) {
    const role = cfg.metadata.labels?.["nico.homystack.com/role"] ?? "";
    const phase = cfg.status?.phase ?? (cfg.metadata.deletionTimestamp ? "Removing" : "Pending");
    lines.push(`  ${cfg.spec.machineRef.name.padEnd(11)} ${role.padEnd(14)} ${phase}`);
  }
  for (const type of ["Ready", "WorkloadAPIAvailable", "NodesHealthy"]) {
    const x = s?.conditions?.find((c) => c.type === type);
    if (x) lines.push(`  ${type}=${x.status} ${x.reason}: ${x.message.slice(0, 100)}`);
  }
  return lines;
}

async function watchUntil(cp: ControlPlane, done: (c: KubernetesCluster | undefined) => boolean, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  let drawn = 0;
  let last = "";
  while (Date.now() < deadline) {
    const c = await cp.client.get<KubernetesCluster>(KUBERNETES_CLUSTERS, "demo", NS);
    const cfgs = (await cp.client.list<NixosConfiguration>(NIXOS_CONFIGURATIONS, { namespace: NS })).items;
    const lines = renderTable(c, cfgs);
    const text = lines.join("\n");
    if (tty) {
      const enc = new TextEncoder();
      Deno.stdout.writeSync(
        enc.encode((drawn ? `\x1b[${drawn}A` : "") + lines.map((l) => `\x1b[2K${l}`).join("\n") + "\n"),
      );
      drawn = lines.length;
    } else if (text !== last) {
      console.log(text);
    }
    last = text;
    if (done(c)) return c;
    await new Promise((r) => setTimeout(r, 400));
  }
  throw new Error(`the demo cluster did not get there within ${timeoutMs / 1000}s`);
}

async function waitReady(url: string, nico: Guarded, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const ok = await fetch(url).then(async (r) => (await r.body?.cancel(), r.ok), () => false);
    if (ok) return;
    await new Promise((r) => setTimeout(r, 300));
  }
  throw new Error(`NICO was not ready within ${timeoutMs / 1000}s:\n${await nico.tail(20)}`);
}

/** What the demo started, for the cleanup to stop. */
interface Running {
  cp: ControlPlane;
  workloads: WorkloadClusters;
  nico?: Guarded | undefined;
  nio?: SimNio | undefined;
  /** What else to stop at the end (the backup store). */
  stops: (() => Promise<void>)[];
}

/** NICO itself (`main.ts run`) with leader election and its self-signed webhook; resolves once it is ready. */
async function startNico(run: Running, logPath: string): Promise<void> {
  const { cp } = run;
  step("Starting NICO (deno run main.ts run): controllers, and the admission webhook with its own CA");
  await kubectl(cp, ["create", "namespace", "nico-system"], { quiet: true });
  const webhookPort = freePort();
  const healthPort = freePort();
  const nico = run.nico = startNicoProcess(
    "nico",
    [
      `--kubeconfig=${cp.kubeconfigPath}`,
      `--namespace=${NS}`,
      "--leader-elect=true",
      "--resolve-refs=false",
      "--lease-namespace=nico-system",
      `--webhook-addr=127.0.0.1:${webhookPort}`,
      `--webhook-url=https://127.0.0.1:${webhookPort}`,
      `--metrics-addr=127.0.0.1:${freePort()}`,
      `--health-addr=127.0.0.1:${healthPort}`,
      "--default-git-repo=https://git.example.com/infra/k3s-flake.git",
      "--workload-probe-interval=1s",
      "--log-format=text",
    ],
    logPath,
  );
  console.log(dim(`NICO's log: ${logPath}`));
  await waitReady(`http://127.0.0.1:${healthPort}/readyz`, nico, 60_000);
  await kubectl(cp, ["get", "validatingwebhookconfigurations,mutatingwebhookconfigurations"]);
}

/** The cluster's conditions as NICO saw them inside it, then `kubectl get nodes` with the kubeconfig it published. */
async function showInside(cp: ControlPlane): Promise<void> {
  step("What NICO sees inside the cluster it built, through the kubeconfig it issued");
  await kubectl(cp, [
    "get",
    "kcluster",
    "demo",
    "-n",
    NS,
    "-o",
    'jsonpath={range .status.conditions[?(@.type=="WorkloadAPIAvailable")]}{.type}={.status} {.message}{"\\n"}{end}' +
    '{range .status.conditions[?(@.type=="NodesHealthy")]}{.type}={.status} {.message}{"\\n"}{end}' +
    '{range .status.conditions[?(@.type=="ControlPlaneHealthy")]}{.type}={.status} {.message}{"\\n"}{end}',
  ]);

  step("Using the kubeconfig NICO published");
  const secret = await cp.client.get<{ metadata: { name: string }; data: { value: string } }>(
    SECRETS,
    "demo-kubeconfig",
    NS,
  );
  const path = `${cp.dir}/demo.kubeconfig`;
  await Deno.writeTextFile(path, atob(secret!.data.value), { mode: 0o600 });
  console.log(
    dim(`$ kubectl get secret demo-kubeconfig -n ${NS} -o jsonpath='{.data.value}' | base64 -d > demo.kubeconfig`),
  );
  await kubectl(cp, ["--kubeconfig", path, "get", "nodes", "-o", "wide"].slice(2), { kubeconfig: path });
}

/** A cluster the webhook must refuse: a Machine NIO cannot reach, and one already taken. */
async function showRefusal(cp: ControlPlane): Promise<void> {
  step("Refused at once by NICO's webhook: a Machine NIO cannot reach, and one that is already taken");
  await kubectl(cp, ["apply", "-f", "-"], {
    stdin: `apiVersion: nio.homystack.com/v1alpha1
kind: Machine
metadata: {name: spare-01, namespace: ${NS}, annotations: {sim.nio.homystack.com/undiscoverable: "true"}}
spec: {host: 127.0.10.31, sshUser: root}
`,
  });
  const bad = `apiVersion: nico.homystack.com/v1alpha1
kind: KubernetesCluster
metadata: {name: second, namespace: ${NS}}
spec:
  controlPlane: {machines: [spare-01]}
  dataPlane: {machines: [worker-01]}
`;
  const refused = await kubectl(cp, ["apply", "-f", "-"], { stdin: bad });
  if (refused.code === 0) throw new Error("the invalid cluster was accepted");
}

/** The demo's steps, from the simulated NIO to the deleted cluster. */
async function demo(run: Running, logPath: string): Promise<void> {
  const { cp, workloads } = run;
  console.log(
    `API server ${cp.server}; CRDs installed: KubernetesCluster (NICO), Machine and NixosConfiguration (NIO)`,
  );
  await kubectl(cp, ["create", "namespace", NS]);

  step(
    "Starting the simulated NIO (applies each configuration after ~1.5 s; the bootstrap node runs a real API server)",
  );
  run.nio = startSimNio(cp.client, {
    namespace: NS,
    applyDelayMs: 1500,
    removeDelayMs: 500,
    onBootstrapApplied: workloads.onBootstrapApplied,
    onApplied: workloads.onApplied,
    onApplyStarted: workloads.onApplyStarted,
    onRemoved: workloads.onRemoved,
  });
  await startNico(run, logPath);

  step("Creating five Machines and a KubernetesCluster");
  await kubectl(cp, ["apply", "-f", `${ROOT}examples/machines.yaml`]);
  await kubectl(cp, ["apply", "-f", `${ROOT}examples/cluster-selector.yaml`]);

  step("Waiting for the cluster to become Ready (NIO applied every node and every Node is Ready in the cluster)");
  await watchUntil(cp, (c) => c?.status?.phase === "Ready", 120_000);
  await kubectl(cp, ["get", "kcluster", "-n", NS, "-o", "wide"]);
  await showInside(cp);
  await showRefusal(cp);
  const io = { step, dim, kubectl: (args: string[], o: { stdin?: string } = {}) => kubectl(cp, args, o) };
  const store = await showEtcdBackup(cp, NS, "demo", io);
  run.stops.push(() => store.stop());

  step("Deleting the cluster: NIO runs #minimal on every node, NICO releases every Machine");
  await kubectl(cp, ["delete", "kcluster", "demo", "-n", NS, "--wait=false"]);
  await watchUntil(cp, (c) => c === undefined, 60_000);
  await kubectl(cp, ["get", "machines", "-n", NS, "-L", "nico.homystack.com/cluster"]);
}

async function main(): Promise<number> {
  const started = Date.now();
  step("Starting a local control plane (etcd and kube-apiserver v1.37.2, built once and cached)");
  const cp = await startControlPlane();
  const run: Running = { cp, workloads: workloadClusters(cp.client), stops: [] };
  try {
    await demo(run, `${cp.dir}/nico.log`);
    console.log(`\n${bold("Done")} in ${Math.round((Date.now() - started) / 1000)} s.`);
    return 0;
  } catch (err) {
    console.error(`\ndemo failed: ${(err as Error).message}`);
    if (run.nico) console.error(`--- last lines of NICO's log ---\n${await run.nico.tail(40)}`);
    return 1;
  } finally {
    await run.nico?.stop();
    for (const stop of run.stops) await stop().catch(() => {});
    await run.nio?.stop();
    await run.workloads.stop();
    await cp.stop();
  }
}

if (import.meta.main) Deno.exit(await main());
