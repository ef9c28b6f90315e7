/**
 * `spec.nio`: the settings NICO passes to NIO v1 with every node's
 * NixosConfiguration (part of the `KubernetesCluster` schema).
 *
 * @module
 */
import { z } from "zod";
import { DNS_SUBDOMAIN } from "./common.ts";
import { parseCron } from "../lib/cron.ts";

const PRESERVE = { "x-kubernetes-preserve-unknown-fields": true } as const;
const LocalRef = (what: string) =>
  z.object({ name: z.string().min(1).max(253).regex(DNS_SUBDOMAIN).describe(`Name of the ${what}.`) });

/** A cron schedule NICO can read (the same syntax a Kubernetes CronJob takes, in UTC). */
export const CronSchedule = z.string().min(1).max(128).superRefine((v, ctx) => {
  try {
    parseCron(v);
  } catch (err) {
    ctx.addIssue({ code: "custom", message: `not a cron schedule: ${(err as Error).message}` });
  }
});

export const NioSettings = z.object({
  dayTwoSchedule: CronSchedule.optional()
    .describe(
      "NIO v1: when NIO re-applies each node's configuration (cron, UTC; NIO's default */30 * * * *). NIO v1 runs " +
        "a node at once only for a new commit; any other change (cluster.nix, files, the folder) reaches a node at " +
        "its next scheduled run, so during a rollout NICO gives the one node it is updating the schedule " +
        "'* * * * *' and restores this one once the node ran. The older NIO ignores it.",
    ),
  jobTemplate: z.object({
    image: z.string().min(1).max(1024).optional().describe("Image of the run Pods."),
    nodeSelector: z.record(z.string(), z.string()).optional().describe("Node labels the run Pods need."),
    tolerations: z.array(z.object({}).loose().meta(PRESERVE)).max(64).optional()
      .describe("Tolerations of the run Pods (Kubernetes Toleration objects)."),
    resources: z.object({}).loose().meta(PRESERVE).optional()
      .describe("Resources of the run Pods (a Kubernetes ResourceRequirements object)."),
    serviceAccountName: z.string().min(1).max(253).regex(DNS_SUBDOMAIN).optional()
      .describe("ServiceAccount of the run Pods."),
  }).optional().describe(
    "NIO v1: passed to each NixosConfiguration's jobTemplate. NIO v1.0.0 accepts it but builds its run Pods " +
      "without it (read from its source); later NIO releases may use it. The older NIO ignores it.",
  ),
  storeRef: LocalRef("NixStore").optional()
    .describe("NIO v1: a NixStore (binary cache) in the cluster's namespace for the runs. The older NIO ignores it."),
  builderRef: LocalRef("NixBuilder").optional()
    .describe("NIO v1: a NixBuilder (remote builder) in the cluster's namespace. The older NIO ignores it."),
}).describe("Settings NICO passes to NIO with every node's NixosConfiguration (NIO v1 only).");
