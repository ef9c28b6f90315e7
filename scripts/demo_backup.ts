/**
 * The demo's etcd step (scripts/demo.ts): what NICO sees of the cluster's
 * etcd (members, leader, health), then a backup NICO takes itself to an
 * S3-compatible store on loopback (versitygw, testing/s3.ts; built once and
 * cached like the control plane), asked for with `nico backup` and listed
 * with `nico backups`.
 *
 * @module
 */
import { stringify } from "yaml";
import type { ControlPlane } from "../testing/envtest/controlplane.ts";
import { type S3Server, startS3Server } from "../testing/s3.ts";
import { runNicoCli } from "../testing/cli.ts";

/** What the demo prints a step with, and runs kubectl with. */
export interface DemoIo {
  step(title: string): void;
  dim(text: string): string;
  kubectl(args: string[], opts?: { stdin?: string }): Promise<{ code: number; stdout: string; stderr: string }>;
}

/** The cluster's etcd as NICO sees it, then a backup of it; answers the store (the caller stops it). */
export async function showEtcdBackup(cp: ControlPlane, ns: string, cluster: string, io: DemoIo): Promise<S3Server> {
  io.step("etcd as NICO reads it itself: the members, who leads, their health");
  await io.kubectl([
    "get",
    "kcluster",
    cluster,
    "-n",
    ns,
    "-o",
    'jsonpath={range .status.etcd.members[*]}{.name}  leader={.leader}  healthy={.healthy}  id={.memberID}{"\\n"}{end}',
  ]);
  io.step("A backup NICO takes itself: an S3-compatible store (versitygw on loopback), a Secret, spec.etcd.backup");
  const store = await startS3Server({ buckets: ["etcd"] });
  const secret = {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: "etcd-backups", namespace: ns },
    stringData: { accessKeyId: store.accessKeyId, secretAccessKey: store.secretAccessKey },
  };
  await io.kubectl(["apply", "-f", "-"], { stdin: stringify(secret) });
  const backup = {
    spec: {
      etcd: {
        backup: { store: { endpoint: store.endpoint, bucket: "etcd", credentialsSecret: { name: "etcd-backups" } } },
      },
    },
  };
  await io.kubectl(["patch", "kcluster", cluster, "-n", ns, "--type=merge", "-p", JSON.stringify(backup)]);
  for (const args of [["backup", cluster, "--timeout", "60"], ["backups", cluster]]) {
    console.log(io.dim(`$ nico ${args.join(" ")} -n ${ns}`));
    const out = await runNicoCli([...args, `--kubeconfig=${cp.kubeconfigPath}`, "-n", ns]);
    if (out.stdout.trim()) console.log(out.stdout.trimEnd());
    if (out.code !== 0) throw new Error(`nico ${args[0]} failed: ${out.stderr.trim()}`);
  }
  return store;
}
