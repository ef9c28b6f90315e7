/**
 * What NICO knows of one member node in a pass, as one record: gathered once
 * by the reconciler shell, handed as data to the pure rules that judge the
 * node (core/nodes/joined.ts, core/nodes/health.ts, core/rollout/remediation.ts).
 * A rule that needs another fact of a node adds a field here, filled where
 * the shell gathers the others (controllers/cluster/view.ts). Pure.
 *
 * @module
 */
import { CONFIGURATION_ANNOTATION } from "../contract/labels.ts";
import type { NixosConfiguration } from "../contract/nio.ts";
import { askedVersion, clusterNixOf } from "../render/clusternix.ts";
import { type KubeVersion, parseSpecVersion } from "../versions/version.ts";
import { type NodeReport, specChangedAt } from "./readiness.ts";
import { runSoonGraceMs } from "./runs.ts";
import type { NodeView } from "./workload.ts";

/** One member node as the pass knows it. */
export interface NodeFacts {
  machine: string;
  /** Its run report: how NIO applies its configuration (core/nodes/readiness.ts), before the workload cluster is asked. */
  run: NodeReport;
  /** When NICO last changed its configuration (the node timeout counts from there). */
  changedAt?: Date | undefined;
  /** When its configuration was created (it joined the cluster). */
  createdAt?: Date | undefined;
  /** How long NIO v1 may take to fire a run of its current spec by itself (core/nodes/runs.ts `runSoonGraceMs`). */
  runGraceMs?: number | undefined;
  /** What it should run: the configuration id its configuration carries (`cluster.nix` `configuration`). */
  expected?: string | undefined;
  /** Its Node as last seen in the workload cluster (the one named like the Machine), if listed and registered. */
  node?: NodeView | undefined;
  /** The Kubernetes version its configuration asks for (`cluster.nix` `kubernetesVersion`); absent: none. */
  asked?: KubeVersion | undefined;
  /**
   * A control-plane node: what its own API server answered on `/version` (`gitVersion`) since it last applied
   * (an older answer is not its version any more); absent: no answer, or not asked.
   */
  apiServer?: string | undefined;
  /**
   * What etcd's last look said of a control-plane node's member (the one on the node's address), where NICO sees
   * etcd and its members sit where the flake contract puts them: when that look began, and the member (absent:
   * none is on the node's address). A control-plane node is Joined only once a look after its change finds its
   * member a healthy voter (core/nodes/joined.ts).
   */
  etcd?: { seenAt: Date; member?: { healthy: boolean; isLearner: boolean } | undefined } | undefined;
  /**
   * The Machine that would take its place if it left. Set only for a member remediation may replace (an unhealthy
   * one): finding it selects the Machines again.
   */
  replacement?: string | undefined;
}

/** The facts a node's configuration gives: when it was changed and created, and what it should run. */
export type ConfigurationFacts = Pick<NodeFacts, "changedAt" | "createdAt" | "runGraceMs" | "expected" | "asked">;

/**
 * The facts of a node's configuration (none before it exists); `asked` only when its `cluster.nix` asks for a
 * version.
 *
 * @example
 * ```ts
 * import { configurationFacts } from "./facts.ts";
 * const cfg = {
 *   metadata: {
 *     name: "c.w-1",
 *     creationTimestamp: "2026-01-01T00:00:00Z",
 *     annotations: { "nico.homystack.com/spec-changed-at": "2026-01-02T00:00:00.000Z", "nico.homystack.com/configuration": "abc" },
 *   },
 *   spec: { machineRef: { name: "w-1" } },
 * };
 * const f = configurationFacts(cfg as never);
 * f.changedAt?.toISOString(); // "2026-01-02T00:00:00.000Z"
 * f.createdAt?.toISOString(); // "2026-01-01T00:00:00.000Z"
 * f.expected; // "abc"
 * configurationFacts(undefined); // {}
 * ```
 */
export function configurationFacts(cfg: NixosConfiguration | undefined): ConfigurationFacts {
  if (!cfg) return {};
  const created = cfg.metadata.creationTimestamp;
  const asked = parseSpecVersion(askedVersion(clusterNixOf(cfg)) ?? "");
  return {
    changedAt: specChangedAt(cfg),
    createdAt: created ? new Date(created) : undefined,
    runGraceMs: runSoonGraceMs(cfg.metadata.generation, cfg.spec.dayTwoSchedule),
    expected: cfg.metadata.annotations?.[CONFIGURATION_ANNOTATION],
    ...(asked ? { asked } : {}),
  };
}
