/**
 * The user commands of the `nico` binary, and the `kubectl nico` plugin
 * name: `get`, `describe`, `plan`, `kubeconfig`, `backup`, `backups`, `restore`.
 *
 * @module
 */
import { errorMessage } from "../lib/runtime/log.ts";
import { UsageError } from "./flags.ts";

/** The commands main.ts hands over, with a line of help each. */
export const USER_COMMANDS: Record<string, string> = {
  get: "list clusters with their phase, ready nodes and rollout state",
  describe: "a cluster as a tree: planes, nodes, NIO phase, revision, rollout position, conditions",
  plan: "the pending rollout in order, and why each step waits",
  kubeconfig: "a cluster's admin kubeconfig: stdout, --file, or --merge into your kubeconfig",
  backup: "take an etcd backup of a cluster now, wait for it and print it",
  backups: "list a cluster's etcd backups in its store: time, reason, size, revision, hash, member",
  restore: "restore a cluster's etcd from a backup: shows what is rewound, asks, sets spec.etcd.restore",
};

/** Whether the binary runs as the kubectl plugin (installed as `kubectl-nico`). */
export function invokedAsKubectlPlugin(execPath: string, argv0?: string): boolean {
  const base = (p: string | undefined) => (p ?? "").split(/[\\/]/).pop()!.replace(/\.exe$/, "");
  return base(execPath) === "kubectl-nico" || base(argv0) === "kubectl-nico";
}

/** Runs one user command; usage errors exit 2, API errors 1, each with one clear line. */
export async function runUserCommand(command: string, args: string[]): Promise<number> {
  try {
    switch (command) {
      case "get":
        return await (await import("./get.ts")).get(args);
      case "describe":
        return await (await import("./describe.ts")).describe(args);
      case "plan":
        return await (await import("./plan.ts")).plan(args);
      case "kubeconfig":
        return await (await import("./kubeconfig.ts")).kubeconfig(args);
      case "backup":
        return await (await import("./backup.ts")).backup(args);
      case "backups":
        return await (await import("./backup.ts")).backups(args);
      case "restore":
        return await (await import("./restore.ts")).restore(args);
      default:
        throw new UsageError(`unknown command ${command}`);
    }
  } catch (err) {
    if (err instanceof UsageError) {
      console.error(`nico ${command}: ${err.message}`);
      return 2;
    }
    console.error(`nico ${command}: ${errorMessage(err)}`);
    return 1;
  }
}
