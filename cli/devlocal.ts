/**
 * The local world of `nico dev`: a control plane on loopback with NICO's and
 * NIO's CRDs, the simulated NIO, the sample Machines of
 * examples/machines.yaml (loopback hosts), an S3-compatible store for etcd
 * backups (versitygw on loopback, its keys in Secret `etcd-backups`), and a
 * kubeconfig for people.
 *
 * @module
 */
import { parseAllDocuments } from "yaml";
import type { KubeObject } from "../lib/kube/client.ts";
import { NAMESPACES, SECRETS } from "../lib/kube/resources.ts";
import { MACHINES } from "../core/contract/nio.ts";
import { startControlPlane } from "../testing/envtest/controlplane.ts";
import { startSimNio } from "../testing/sim-nio.ts";
import { workloadClusters } from "../testing/workload.ts";
import { startS3Server } from "../testing/s3.ts";
import type { KubeClient } from "../lib/kube/client.ts";

const ROOT = new URL("../", import.meta.url).pathname;
const MACHINES_FILE = `${ROOT}examples/machines.yaml`;

export interface LocalWorld {
  kubeconfig: string;
  /** What to print: how to use it. */
  instructions: string;
  stop(): Promise<void>;
}

/** Starts everything; on a failure half way, stops what started and throws. */
export async function startLocal(dir: string): Promise<LocalWorld> {
  const cp = await startControlPlane();
  const stops: (() => Promise<void>)[] = [() => cp.stop()];
  const stop = async () => {
    for (const s of stops.reverse()) await s().catch(() => {});
  };
  try {
    // Each cluster's bootstrap node gets a real API server on its loopback address, with simulated kubelets.
    const workloads = workloadClusters(cp.client);
    stops.push(() => workloads.stop());
    const nio = startSimNio(cp.client.with({ fieldManager: "sim-nio", userAgent: "sim-nio" }), {
      onBootstrapApplied: workloads.onBootstrapApplied,
      onApplied: workloads.onApplied,
      onApplyStarted: workloads.onApplyStarted,
      onRemoved: workloads.onRemoved,
    });
    stops.push(() => nio.stop());
    const namespaces = new Set<string>(["nico-system"]);
    const objects = parseAllDocuments(await Deno.readTextFile(MACHINES_FILE)).map((d) => d.toJS() as KubeObject)
      .filter((o) => o?.kind);
    for (const o of objects) namespaces.add(o.metadata.namespace ?? "default");
    for (const name of namespaces) {
      await cp.client.apply(NAMESPACES, { apiVersion: "v1", kind: "Namespace", metadata: { name } });
    }
    for (const o of objects) await cp.client.apply(o.kind === "Secret" ? SECRETS : MACHINES, o);
    const machines = objects.filter((o) => o.kind === "Machine");

    const created = await Deno.stat(dir).then(() => false, () => true);
    await Deno.mkdir(dir, { recursive: true });
    const kubeconfig = `${await Deno.realPath(dir)}/kubeconfig`;
    await Deno.copyFile(cp.kubeconfigPath, kubeconfig);
    await Deno.chmod(kubeconfig, 0o600);
    stops.push(() => created ? Deno.remove(dir, { recursive: true }) : Deno.remove(kubeconfig));

    const ns = machines[0]?.metadata.namespace ?? "default";
    const store = await backupStore(cp.client, ns);
    stops.push(store.stop);
    const instructions = [
      "",
      `nico dev: a local control plane at ${cp.server} with NICO's and NIO's CRDs, the simulated NIO`,
      `(it never touches a host) and ${machines.length} sample Machines in namespace ${ns}. In another terminal:`,
      "",
      `  export KUBECONFIG=${kubeconfig}`,
      "  kubectl apply -f examples/cluster-selector.yaml",
      `  kubectl get kcluster -n ${ns} -w`,
      `  deno run -A main.ts describe demo -n ${ns}`,
      ...store.lines,
      "",
      "NICO reloads when its code changes; Ctrl-C stops everything and removes the kubeconfig.",
      "",
    ].join("\n");
    return { kubeconfig, instructions, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** The local store for etcd backups, a bucket `etcd`, and its keys in Secret `etcd-backups` of `ns`. */
async function backupStore(client: KubeClient, ns: string): Promise<{ lines: string[]; stop: () => Promise<void> }> {
  const store = await startS3Server({ buckets: ["etcd"] });
  const data = { accessKeyId: store.accessKeyId, secretAccessKey: store.secretAccessKey };
  const secret = { apiVersion: "v1", kind: "Secret", metadata: { name: "etcd-backups", namespace: ns } };
  await client.apply(SECRETS, { ...secret, stringData: data });
  const spec = { store: { endpoint: store.endpoint, bucket: "etcd", credentialsSecret: { name: "etcd-backups" } } };
  return {
    stop: () => store.stop(),
    lines: [
      "",
      `etcd backups (docs/backups.md) go to the local S3-compatible store at ${store.endpoint}, bucket etcd:`,
      `  kubectl patch kcluster demo -n ${ns} --type=merge -p '${
        JSON.stringify({ spec: { etcd: { backup: spec } } })
      }'`,
      `  deno run -A main.ts backup demo -n ${ns}; deno run -A main.ts backups demo -n ${ns}`,
    ],
  };
}
