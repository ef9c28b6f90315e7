/**
 * The planner's rules about Kubernetes versions (core/rollout/rules.ts lists
 * them with the others): a version change goes to the control plane first,
 * and the skew guard (core/versions/policy.ts) keeps every step within
 * Kubernetes' version skew policy, with or without `spec.version`. Pure;
 * each rule has its rows in tests/unit/rollout_rules_test.ts.
 *
 * @module
 */
import { skewViolations, stepViolations } from "../versions/policy.ts";
import { formatVersion } from "../versions/version.ts";
import type { Draft, RolloutPass, RuleAnswer } from "./types.ts";

/**
 * While a control-plane node's pending change changes its Kubernetes version, the pass is `ControlPlaneFirst`
 * whatever `spec.rollout.order` says (a kubelet must not be newer than kube-apiserver); the order still applies
 * to every other change. Where an upgrade stands (the chain) is said while one is under way.
 */
export function versionChangesControlPlaneFirst(p: RolloutPass, d: Draft): RuleAnswer {
  const upgrading = p.i.versions?.waiting;
  if (upgrading && d.plan.pending.length) d.reasons.push(upgrading);
  if (d.order === "ControlPlaneFirst") return "pass";
  if (!p.cp.some((n) => n.versionChange && n.exists && !n.upToDate)) return "pass";
  d.order = "ControlPlaneFirst";
  const cp = new Set(p.cp.map((n) => n.machine));
  const pending = [...d.plan.pending];
  d.plan.pending.splice(0, pending.length, ...pending.filter((m) => cp.has(m)), ...pending.filter((m) => !cp.has(m)));
  d.reasons.push("the control plane's Kubernetes version changes: it goes first, whatever spec.rollout.order says");
  return "pass";
}

/**
 * The skew guard, on every rollout. A step whose version is known (`spec.version`) and that would add a break of
 * the version skew policy is not taken. A break that exists (a kubelet newer than its API server after a commit
 * bumped it, say) halts the rollout (`VersionSkew`, naming the node, both versions and the fix): nothing is
 * created, updated or removed, except control-plane steps that can only fix it forward (the order is
 * `ControlPlaneFirst`, or `spec.version` is set).
 */
export function versionSkewGuard(p: RolloutPass, d: Draft): RuleAnswer {
  const v = p.i.versions;
  if (!v || p.i.paused) return "pass";
  const { plan } = d;
  const refused = (m: string) => {
    const to = v.asks.get(m);
    const broken = to ? stepViolations(v.nodes, m, to)[0] : undefined;
    if (to && broken) d.reasons.push(`${m} stays where it is, not ${formatVersion(to)}: ${broken.message}`);
    return broken !== undefined;
  };
  plan.create = plan.create.filter((m) => !refused(m));
  plan.update = plan.update.filter((m) => !refused(m));
  const [broken] = skewViolations(v.nodes);
  if (!broken) return "pass";
  const forward = d.order === "ControlPlaneFirst" || v.target;
  const cp = new Set(p.cp.map((n) => n.machine));
  plan.create = plan.create.filter((m) => forward && cp.has(m));
  plan.update = plan.update.filter((m) => forward && cp.has(m));
  plan.remove = [];
  plan.halted ??= { machine: broken.machine, detail: `VersionSkew: ${broken.message}`, reason: "VersionSkew" };
  d.reasons.push(
    `rollout halted at ${broken.machine} (version skew)` +
      (plan.update.length ? `; fixing forward ${plan.update.join(", ")} (the control plane)` : ""),
  );
  return "pass";
}
