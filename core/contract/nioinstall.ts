/**
 * Whether NIO is installed whole: the NIO resources NICO relies on for a generation, which of them the API server
 * does not serve, and what to tell the user about it. Machines and NixosConfigurations are what NICO works on: without
 * either it can judge no cluster. NIO v1 also runs every configuration through NixCronJobs and removes a node
 * through a NixJob (which NICO watches): without those NICO goes on, and says on every cluster what is missing. Pure.
 *
 * @module
 */
import type { NioGeneration } from "./nio.ts";
import { NIO_GROUP } from "./nio.ts";

/** The NIO resources (plural names) NICO relies on, with what each is for, by generation. */
export const NIO_RESOURCES: Readonly<Record<NioGeneration, Readonly<Record<string, string>>>> = {
  v1: {
    machines: "the hosts NICO claims",
    nixosconfigurations: "what NICO writes for each node",
    nixcronjobs: "the runs NIO v1 applies every configuration with",
    nixjobs: "the decommission runs NICO watches when a node leaves",
  },
  older: {
    machines: "the hosts NICO claims",
    nixosconfigurations: "what NICO writes for each node",
  },
};

/** The resources without which NICO can judge no cluster. */
export const ESSENTIAL_NIO_RESOURCES: readonly string[] = ["machines", "nixosconfigurations"];

/**
 * The NIO resources of `generation` the API server does not serve, in the order {@link NIO_RESOURCES} lists them;
 * none when `served` is unknown (discovery could not be asked: NICO assumes NIO is whole, as before).
 *
 * @example
 * ```ts
 * import { missingNioResources } from "./nioinstall.ts";
 * missingNioResources("v1", ["machines", "nixosconfigurations", "nixcronjobs"]); // ["nixjobs"]
 * missingNioResources("older", ["machines", "nixosconfigurations"]); // []
 * missingNioResources("v1", undefined); // []
 * ```
 */
export function missingNioResources(generation: NioGeneration, served: readonly string[] | undefined): string[] {
  if (served === undefined) return [];
  const have = new Set(served);
  return Object.keys(NIO_RESOURCES[generation]).filter((r) => !have.has(r));
}

/**
 * Whether NICO can judge clusters with these resources missing (it cannot without Machines or NixosConfigurations).
 *
 * @example
 * ```ts
 * import { canJudgeClusters } from "./nioinstall.ts";
 * canJudgeClusters(["nixjobs"]); // true
 * canJudgeClusters(["machines", "nixjobs"]); // false
 * ```
 */
export function canJudgeClusters(missing: readonly string[]): boolean {
  return !missing.some((r) => ESSENTIAL_NIO_RESOURCES.includes(r));
}

/** How to install NIO's CRDs, by generation. */
const INSTALL: Record<NioGeneration, string> = {
  v1:
    "install NIO's CRDs (its release's install.yaml with `kubectl apply --server-side -f`, or `make install` in its " +
    "source tree)",
  older: "install the older NIO's CRDs from its manifests",
};

/**
 * What to tell the user: which resources of NIO's API group are not served, what each is for, how to install them,
 * and that NICO reads what NIO serves when it starts.
 *
 * @example
 * ```ts
 * import { nioMissingMessage } from "./nioinstall.ts";
 * nioMissingMessage("v1", ["nixjobs"]).split(";")[0];
 * // "NIO v1 is not fully installed: the API server serves no nixjobs.nio.homystack.com (the decommission runs NICO watches when a node leaves)"
 * ```
 */
export function nioMissingMessage(generation: NioGeneration, missing: readonly string[]): string {
  const what = missing.map((r) => `${r}.${NIO_GROUP} (${NIO_RESOURCES[generation][r] ?? "a resource of NIO"})`);
  const name = generation === "v1" ? "NIO v1" : "the older NIO";
  const judged = canJudgeClusters(missing)
    ? "NICO goes on with what is served"
    : "NICO changes nothing on any cluster until they are";
  return `${name} is not fully installed: the API server serves no ${what.join(", no ")}; ${judged}. ` +
    `To fix it, ${INSTALL[generation]}, then restart NICO (\`kubectl -n nico-system rollout restart deployment/nico\`)`;
}
