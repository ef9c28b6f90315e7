/**
 * How GitOps tools read a KubernetesCluster: `gitops-check` (testing/gitops/,
 * built by its install.sh into a cache outside the repo) runs the kstatus
 * library of `sigs.k8s.io/cli-utils`, a Flux `healthCheckExprs` entry with
 * cel-go and an Argo CD health script with gopher-lua, one object a line.
 * The recipes are read from `deploy/gitops/`, so what is shipped is what is
 * tested.
 *
 * @module
 */
import { parse } from "yaml";
import { installed } from "./installed.ts";

const INSTALL = new URL("./gitops/install.sh", import.meta.url);
const RECIPES = new URL("../deploy/gitops/", import.meta.url).pathname;

/** One reader's verdict: a status, or why it could not give one. */
export interface Verdict {
  status?: string;
  message?: string;
  error?: string;
}

/** The three readers' verdicts on one object; `flux` and `argo` only when asked. */
export interface Verdicts {
  kstatus: Verdict;
  flux?: Verdict;
  argo?: Verdict;
}

/** A Flux `healthCheckExprs` entry's expressions. */
export interface FluxExprs {
  current: string;
  inProgress?: string;
  failed?: string;
}

/** The shipped recipes: Flux's expressions for KubernetesCluster and Argo CD's Lua health script. */
export interface Recipes {
  flux: FluxExprs;
  lua: string;
}

/** A running `gitops-check`. */
export interface GitopsCheck {
  /** The verdicts on `object`; Flux and Argo CD only when `recipes` are given. */
  read(object: unknown, recipes?: Partial<Recipes>): Promise<Verdicts>;
  close(): Promise<void>;
}

/** The path of `gitops-check`; the first call may build it (flock-guarded, a minute once). */
export const gitopsCheckPath: () => Promise<string> = installed(INSTALL);

/** Reads the Flux and Argo CD recipes from deploy/gitops/. */
export async function shippedRecipes(): Promise<Recipes> {
  const kustomization = parse(await Deno.readTextFile(`${RECIPES}flux-kustomization.yaml`)) as {
    spec: { healthCheckExprs: (FluxExprs & { apiVersion: string; kind: string })[] };
  };
  const entry = kustomization.spec.healthCheckExprs.find((e) => e.kind === "KubernetesCluster");
  if (!entry) throw new Error("deploy/gitops/flux-kustomization.yaml has no KubernetesCluster entry");
  const cm = parse(await Deno.readTextFile(`${RECIPES}argocd-cm.yaml`)) as { data: Record<string, string> };
  const lua = cm.data["resource.customizations.health.nico.homystack.com_KubernetesCluster"];
  if (!lua) throw new Error("deploy/gitops/argocd-cm.yaml has no health check for KubernetesCluster");
  const { current, inProgress, failed } = entry;
  return { flux: { current, ...(inProgress ? { inProgress } : {}), ...(failed ? { failed } : {}) }, lua };
}

/** Starts `gitops-check`; it exits when its input closes (`close()`, or this process ending). */
export async function startGitopsCheck(): Promise<GitopsCheck> {
  const child = new Deno.Command(await gitopsCheckPath(), { stdin: "piped", stdout: "piped", stderr: "inherit" })
    .spawn();
  const writer = child.stdin.getWriter();
  const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  const encoder = new TextEncoder();
  let buffered = "";
  let queue = Promise.resolve();

  const nextLine = async (): Promise<string> => {
    while (!buffered.includes("\n")) {
      const { value, done } = await lines.read();
      if (done) throw new Error("gitops-check exited");
      buffered += value;
    }
    const at = buffered.indexOf("\n");
    const line = buffered.slice(0, at);
    buffered = buffered.slice(at + 1);
    return line;
  };

  return {
    read(object, recipes = {}) {
      const request = JSON.stringify({ object, ...recipes });
      const answer = queue.then(async () => {
        await writer.write(encoder.encode(`${request}\n`));
        return JSON.parse(await nextLine()) as Verdicts;
      });
      queue = answer.then(() => {}, () => {});
      return answer;
    },
    async close() {
      await queue;
      await writer.close().catch(() => {});
      await lines.cancel().catch(() => {});
      await child.status;
    },
  };
}
