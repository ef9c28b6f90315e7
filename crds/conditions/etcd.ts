/**
 * `EtcdHealthy`: stacked etcd as NICO sees it over etcd's own client API,
 * with the credentials it issues (the flake contract), or why it cannot.
 *
 * @module
 */
import { reason, type TypeSpec } from "./types.ts";

export const ETCD_HEALTHY = {
  role: "detail",
  polarity: "positive",
  watched: false,
  about: "every voting etcd member answers and is healthy, one leads, no alarm is raised, and every member stands " +
    "for a control-plane node (seen from etcd itself, when the flake follows the etcd contract)",
  reasons: {
    Healthy: reason(
      "True",
      "fine",
      "later",
      "every voting member answered its status in time, one leads, no alarm is raised and no member is an orphan; " +
        "`status.etcd` lists the members and which were counted",
      "nothing",
    ),
    MemberUnhealthy: reason(
      "False",
      "attention",
      "later",
      "a voting member does not answer (or reports errors), but the others keep a healthy majority with room to lose " +
        "another; control-plane steps that would take a healthy member down wait",
      "look at the named member's node; NICO replaces it if `spec.controlPlane.remediation` is set",
    ),
    QuorumAtRisk: reason(
      "False",
      "attention",
      "now",
      "a voting member is unhealthy and the healthy ones are exactly a majority: one more loss stops etcd; NICO " +
        "takes no healthy member down",
      "bring the unhealthy member back, or let remediation replace it",
    ),
    QuorumLost: reason(
      "False",
      "attention",
      "now",
      "fewer healthy voting members than a majority (or no member lists the members and those that answer have no " +
        "leader): etcd refuses writes, the Kubernetes API with it; NICO changes no control-plane node, removes no " +
        "member and replaces none",
      "bring members back (power, network); if they are gone for good, restore etcd from a backup",
    ),
    Alarm: reason(
      "False",
      "attention",
      "now",
      "a member raised `NOSPACE` (the quota is full: writes refused) or `CORRUPT` (its data differs from the others')",
      "NOSPACE: compact and defragment, then disarm the alarm; CORRUPT: replace the member named",
    ),
    OrphanMember: reason(
      "False",
      "attention",
      "later",
      "a member stands for no control-plane node of the cluster (its peer URL is on no node's address), or was added " +
        "and never started or promoted within the startup timeout (a failed join); NICO removes it, with an " +
        "`EtcdMemberRemoved` Event, while quorum holds",
      "nothing, unless the message says NICO may not remove it (then bring members back first)",
    ),
    MembershipBlocked: reason(
      "False",
      "attention",
      "now",
      "a membership change the rollout needs (a leaving node's member removed, leadership moved) would lose quorum, " +
        "so the step waits; the message says which members were counted",
      "bring the unhealthy members back",
    ),
    EtcdUnreachable: reason(
      "Unknown",
      "attention",
      "later",
      "no member answers NICO on the contract's port with its credentials (refused, TLS refused, no answer in " +
        "time); the rollout keeps to the Node-based rules, as for a flake without the etcd contract",
      "nothing if the flake does not follow the etcd contract (an external etcd); otherwise check that etcd serves " +
        "clients on each control-plane node's address and port (`spec.etcd.clientPort`) with a certificate from " +
        "`<cluster>-etcd-ca` and trusts client certificates it signed",
    ),
    EtcdNotObserved: reason(
      "Unknown",
      "progress",
      "later",
      "NICO does not look at etcd: the cluster has no etcd CA (brought up before NICO issued one), or NICO has " +
        "not asked yet (with `--workload-connections=false` NICO looks inside no workload cluster and the cluster " +
        "carries no EtcdHealthy at all, as no workload condition)",
      "nothing; the message says which and how to change it",
    ),
  },
} as const satisfies TypeSpec;
