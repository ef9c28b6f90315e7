/**
 * `spec.<plane>.remediation` and `spec.<plane>.spares`: when NICO takes an
 * unhealthy node out of service and lets a spare take its place (part of
 * the `KubernetesCluster` schema; the rules are in core/rollout/remediation.ts and
 * docs/readiness.md).
 *
 * @module
 */
import { z } from "zod";
import { DNS_SUBDOMAIN } from "./common.ts";
import { durationPattern } from "../lib/duration.ts";

/** A duration such as `90s` or `5m`; `0s` turns the check off. */
const Timeout = z.string().regex(durationPattern(["s", "m", "h"]), "expected a duration such as 90s, 5m or 2h");

/** A count (`2`) or a percentage of the plane's members (`"40%"`). */
export const IntOrPercent = z.union([
  z.int().min(0).max(1000),
  z.string().regex(/^(\d{1,4}|\d{1,3}%)$/, 'expected a count such as 2 or a percentage such as "40%"'),
]).meta({
  "x-kubernetes-int-or-string": true,
  // Kubernetes takes no bounds inside an int-or-string's anyOf (crds/generate.ts drops them): a rule says them.
  "x-kubernetes-validations": [{
    rule: "type(self) == int ? (self >= 0 && self <= 1000) : self.matches('^([0-9]{1,4}|[0-9]{1,3}%)$')",
    message: 'expected a count such as 2 or a percentage such as "40%"',
  }],
});

/** The defaults of a `remediation` block (each applies when the block is present and leaves the field out). */
export const REMEDIATION_DEFAULTS = {
  nodeNotReadyTimeout: "5m",
  nodeStartupTimeout: "20m",
  machineUnreachableTimeout: "5m",
  maxUnhealthy: "40%",
  maxRetries: 3,
  retryPeriod: "1h",
} as const;

export const Remediation = z.object({
  nodeNotReadyTimeout: Timeout.default(REMEDIATION_DEFAULTS.nodeNotReadyTimeout)
    .describe(
      "A node whose Node is NotReady or Unknown this long is unhealthy (judged only while the workload API answers, " +
        "counted from the later of the Node's last transition and the node's last configuration change, and only " +
        "once the node was seen working with its current configuration: a change that breaks nodes is the rollout's " +
        "to halt, not a reason to burn spares). 0s: off.",
    ),
  nodeStartupTimeout: Timeout.default(REMEDIATION_DEFAULTS.nodeStartupTimeout)
    .describe(
      "A new node that NIO applied but whose Node was never Ready this long after its configuration was created is " +
        "unhealthy. 0s: off.",
    ),
  machineUnreachableTimeout: Timeout.default(REMEDIATION_DEFAULTS.machineUnreachableTimeout)
    .describe(
      "A node whose Machine NIO reports undiscoverable (condition Discoverable=False) this long is unhealthy. " +
        "Needs NIO v1 (the older NIO says no since when). 0s: off.",
    ),
  maxUnhealthy: IntOrPercent.default(REMEDIATION_DEFAULTS.maxUnhealthy)
    .describe(
      "Above this many unhealthy nodes in the plane (a count, or a percentage of its members rounded up) NICO " +
        "remediates none of them and says why (Remediating=False, TooManyUnhealthy): a dark rack or a network split " +
        "is no reason to replace every machine.",
    ),
  maxRetries: z.int().min(0).max(100).default(REMEDIATION_DEFAULTS.maxRetries)
    .describe(
      "A node brought in by a remediation of the plane within retryPeriod that fails too is replaced again only " +
        "while the plane has had at most this many remediations in that period (RetryLimit otherwise), so a bad " +
        "flake or a bad batch of machines does not use up the pool.",
    ),
  retryPeriod: Timeout.default(REMEDIATION_DEFAULTS.retryPeriod)
    .describe("The window maxRetries counts remediations in (from the times in their marks)."),
}).describe(
  "Self-healing: an unhealthy node's Machine is marked out of service (annotation nico.homystack.com/remediated, " +
    "which a person removes once the host is repaired) and replaced by a free Machine of the selector, or by one " +
    "of spares for an explicit list, with the usual rollout rules. The control plane is remediated one member at " +
    "a time, only with a spare, and never when the remaining healthy members would not keep etcd quorum. " +
    "Absent: off.",
);

export const Spares = z.array(z.string().min(1).max(253).regex(DNS_SUBDOMAIN)).max(32)
  .describe(
    "With an explicit machines list: standby Machines, in order of preference, that take the place of a listed " +
      "Machine that cannot serve (taken out of service by remediation or by hand, deleted, or claimed by " +
      "another cluster). A listed Machine that can serve again takes its place back.",
  ).meta({
    "x-kubernetes-validations": [{
      rule: "self.all(m, self.exists_one(x, x == m))",
      message: "a spare is named more than once; list each Machine once",
    }],
  });

export type RemediationSpec = z.output<typeof Remediation>;
