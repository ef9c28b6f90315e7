/**
 * `nico kubeconfig <cluster>`: the admin kubeconfig NICO published, to
 * stdout, to a file (mode 0600), or merged into the user's kubeconfig under
 * a context named after the cluster.
 *
 * @module
 */
import { parse, stringify } from "yaml";
import type { KubernetesCluster } from "../crds/kubernetescluster.ts";
import type { KubeObject } from "../lib/kube/client.ts";
import { SECRETS } from "../lib/kube/resources.ts";
import { KUBERNETES_CLUSTERS } from "../crds/kubernetescluster.ts";
import { conditionOf } from "../crds/conditions/mod.ts";
import { kubeconfigSecret } from "../core/contract/names.ts";
import { KubeconfigUnreadable, parseIssuedKubeconfig } from "../core/render/kubeconfig.ts";
import { decodeBase64 } from "../lib/encoding.ts";
import { commandHelp, type FlagSpec, parseArgs, targetFor, UsageError } from "./flags.ts";

const FLAGS: FlagSpec[] = [
  { name: "file", short: "f", help: "write to this file (mode 0600) instead of stdout" },
  {
    name: "merge",
    boolean: true,
    help: "merge into $KUBECONFIG (its first file) or ~/.kube/config under a context named after the cluster",
  },
];

export const KUBECONFIG_HELP = commandHelp(
  "nico kubeconfig <cluster> [flags]",
  "Prints the admin kubeconfig of a cluster (Secret <cluster>-kubeconfig), or writes or merges it.",
  FLAGS,
);

interface Named {
  name: string;
  [k: string]: unknown;
}

interface KubeconfigDoc {
  clusters?: Named[];
  users?: Named[];
  contexts?: Named[];
  "current-context"?: string;
  [k: string]: unknown;
}

/**
 * `into` (the user's kubeconfig, kept as it is otherwise) with the clusters,
 * users and contexts of `add` (a kubeconfig NICO issued, read by
 * {@link parseIssuedKubeconfig}) replacing those of the same name; the
 * current context is kept (set only when there is none). Pure.
 */
export function mergeKubeconfig(into: string, add: string): string {
  const base = (parse(into || "{}") ?? {}) as KubeconfigDoc;
  const extra = parseIssuedKubeconfig(add).file as KubeconfigDoc;
  const out: KubeconfigDoc = { apiVersion: "v1", kind: "Config", ...base };
  for (const key of ["clusters", "users", "contexts"] as const) {
    const mine = extra[key] ?? [];
    out[key] = [...(base[key] ?? []).filter((e) => !mine.some((m) => m.name === e.name)), ...mine];
  }
  if (!out["current-context"] && extra["current-context"]) out["current-context"] = extra["current-context"];
  return stringify(out);
}

/** The file `--merge` writes: the first of $KUBECONFIG, else ~/.kube/config. */
export function defaultKubeconfigPath(env: Record<string, string | undefined>): string {
  const first = (env.KUBECONFIG ?? "").split(":").find((p) => p !== "");
  if (first) return first;
  const home = env.HOME ?? env.USERPROFILE;
  if (!home) throw new UsageError("--merge: set KUBECONFIG or HOME so nico knows which file to merge into");
  return `${home}/.kube/config`;
}

async function writePrivate(path: string, text: string): Promise<void> {
  const dir = path.includes("/") ? path.slice(0, path.lastIndexOf("/")) : "";
  if (dir) await Deno.mkdir(dir, { recursive: true });
  await Deno.writeTextFile(path, text, { mode: 0o600 });
  await Deno.chmod(path, 0o600); // an existing file keeps its mode on write
}

/** Entry point of `nico kubeconfig`; answers the exit code. */
export async function kubeconfig(args: string[]): Promise<number> {
  const { flags, positional } = parseArgs("kubeconfig", args, FLAGS);
  if (flags.help) {
    console.log(KUBECONFIG_HELP);
    return 0;
  }
  if (positional.length !== 1) throw new UsageError("kubeconfig needs one cluster name: nico kubeconfig <cluster>");
  if (flags.file && flags.merge) throw new UsageError("--file and --merge exclude each other: pick one");
  const name = positional[0]!;
  const { client, namespace } = targetFor(flags);
  try {
    const secret = await client.get<KubeObject & { data?: Record<string, string> }>(
      SECRETS,
      kubeconfigSecret(name),
      namespace,
    );
    const value = secret?.data?.value;
    if (!value) {
      const cluster = await client.get<KubernetesCluster>(KUBERNETES_CLUSTERS, name, namespace);
      if (!cluster) {
        console.error(`nico kubeconfig: no KubernetesCluster ${name} in namespace ${namespace} (try nico get -A)`);
      } else {
        const ready = conditionOf(cluster.status?.conditions, "Ready");
        console.error(
          `nico kubeconfig: cluster ${name} has no kubeconfig yet: NICO issues it once the bootstrap node is ready` +
            (ready ? ` (Ready=${ready.status} ${ready.reason}: ${ready.message})` : "") +
            `; see nico describe ${name}`,
        );
      }
      return 1;
    }
    const text = decodeBase64(value);
    try {
      parseIssuedKubeconfig(text); // what NICO itself cannot read is refused here too, with the reason
    } catch (err) {
      if (!(err instanceof KubeconfigUnreadable)) throw err;
      console.error(`nico kubeconfig: Secret ${kubeconfigSecret(name)} in namespace ${namespace}: ${err.message}`);
      return 1;
    }
    if (typeof flags.file === "string") {
      await writePrivate(flags.file, text);
      console.error(`wrote ${flags.file}; use: kubectl --kubeconfig ${flags.file} get nodes`);
    } else if (flags.merge) {
      const path = defaultKubeconfigPath(Deno.env.toObject());
      const current = await Deno.readTextFile(path).catch((err) => {
        if (err instanceof Deno.errors.NotFound) return "";
        throw err;
      });
      await writePrivate(path, mergeKubeconfig(current, text));
      console.error(`merged context ${name} into ${path}; use: kubectl --context ${name} get nodes`);
    } else {
      await Deno.stdout.write(new TextEncoder().encode(text));
    }
    return 0;
  } finally {
    await client.close();
  }
}
