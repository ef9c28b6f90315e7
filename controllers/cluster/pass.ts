/**
 * The phases of a normal pass, in order, each given what the phases before
 * it produced (its signature says what it needs), and answering what it
 * produced. What has been produced so far is kept in a {@link PassRecord}, so
 * that the status can be computed however the pass ends.
 *
 * @module
 */
import type { NodeReport } from "../../core/readiness.ts";
import { reconcileClaims } from "./phases/claims.ts";
import { reconcileConfigurations } from "./phases/configurations.ts";
import { reconcileKubeconfig } from "./phases/kubeconfig.ts";
import { reconcileReleases } from "./phases/releases.ts";
import { reconcileRemediation } from "./phases/remediation.ts";
import { observeRuns } from "./phases/runs.ts";
import { reconcileSecrets } from "./phases/secrets.ts";
import { observeWorkload, settleWorkloadNodes } from "./phases/workload.ts";
import type { Requeue } from "./requeue.ts";
import type { ClusterScope } from "./scope.ts";
import { type Identity, nodeReports, type PassView } from "./view.ts";

/** What the phases of a pass produced so far (a phase that threw adds nothing). */
export interface PassRecord extends PassView {
  identity?: Identity | undefined;
}

/** What a pass that ran every phase answers: the node reports, and when each phase wishes to look again. */
export interface PassEnd {
  nodes: NodeReport[];
  wishes: (Requeue | undefined)[];
}

/** Runs the phases in order; `rec` receives each one's product as it is made. */
export async function runPhases(s: ClusterScope, rec: PassRecord): Promise<PassEnd> {
  const identity = rec.identity = await reconcileSecrets(s);
  await reconcileClaims(s);
  const runFailures = rec.runFailures = await observeRuns(s);
  const workload = rec.workload = observeWorkload(s);
  const configured = await reconcileConfigurations(s, { identity, workload, runFailures });
  const released = await reconcileReleases(s);
  const nodes = passNodes(s, rec);
  const remedied = s.out.blocked ? undefined : await reconcileRemediation(s, nodes, workload);
  await reconcileKubeconfig(s, nodes, identity.ca);
  await settleWorkloadNodes(s, nodes, workload);
  return { nodes, wishes: [configured.requeue, released.requeue, remedied?.requeue] };
}

/** The members' reports as of what the pass produced (none while nodes cannot be rendered). */
export function passNodes(s: ClusterScope, v: PassView): NodeReport[] {
  return s.out.blocked ? [] : nodeReports(s, v);
}
