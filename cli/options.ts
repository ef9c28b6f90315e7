/**
 * `nico run` options: flags override environment variables; zod validates
 * both and a bad value is a clear error (exit code 2).
 *
 * @module
 */
import { z } from "zod";
import { durationPattern, formatDuration, parseDuration } from "../lib/duration.ts";
import { parseHostPolicy } from "../lib/git/hosts.ts";
import { parseNamespaceShards, SHARD_NAME_PATTERN } from "../core/contract/shards.ts";
import {
  CLUSTER_DEFAULTS,
  type ClusterSettings,
  defaultWorkers,
  MAX_DEFAULT_WORKERS,
} from "../controllers/cluster/settings.ts";
import { parseCidrList, type TargetRules } from "../controllers/cluster/workload/targets.ts";
import { labelKeyList } from "../core/render/argocd.ts";

const bool = z.union([z.boolean(), z.enum(["true", "false", "1", "0"]).transform((v) => v === "true" || v === "1")]);
const address = z.string().regex(
  /^(\[[0-9a-fA-F:]+\]|[^:\s]*):\d{1,5}$/,
  "expected host:port, such as :8080 or 127.0.0.1:9443",
);
const duration = z.string().regex(durationPattern(), "expected a duration such as 90s, 30m or 1h")
  .transform((v) => parseDuration(v)!);

export { defaultWorkers, MAX_DEFAULT_WORKERS };

const cidrs = z.string().default("").refine((v) => {
  try {
    parseCidrList(v);
    return true;
  } catch {
    return false;
  }
}, "expected a comma-separated list of addresses and CIDR ranges");

/** A knob's one default, for the flags the cluster controller reads (controllers/cluster/settings.ts). */
const D = CLUSTER_DEFAULTS;

export const RunOptions = z.object({
  kubeconfig: z.string().optional().describe("Kubeconfig file; default $KUBECONFIG, ~/.kube/config or in-cluster."),
  context: z.string().min(1).optional().describe("Kubeconfig context to use instead of its current-context."),
  allowInsecureKubeconfig: bool.default(false).describe(
    "Accept a kubeconfig with insecure-skip-tls-verify (Deno must also run with --unsafely-ignore-certificate-errors).",
  ),
  namespace: z.string().optional().describe("Watch only this namespace; default all namespaces."),
  shard: z.string().regex(SHARD_NAME_PATTERN, "expected a shard name (lower-case letters, digits and '-', at most 40)")
    .optional().describe(
      "Reconcile only the clusters labelled nico.homystack.com/shard=<name>, with a leader Lease of the shard's own; default (or 'default'): the clusters without the label.",
    ),
  namespaceShards: z.string().default("").refine((v) => {
    try {
      parseNamespaceShards(v);
      return true;
    } catch {
      return false;
    }
  }, "expected comma-separated namespace:shard pairs").describe(
    "Which shards a namespace's clusters may be labelled for, as namespace:shard pairs; a namespace not listed may use any (the default shard is always allowed).",
  ),
  shardCheckInterval: duration.default(60_000).describe(
    "How often the default shard's leader looks for clusters labelled for a shard no NICO runs (a ShardNotRunning Event on each).",
  ),
  workers: z.coerce.number().int().min(1).max(64).default(D.workers).describe(
    "Concurrent reconciles; the default is this machine's CPU count (what the process may use), from 2 to 16.",
  ),
  defaultGitRepo: z.string().min(1).optional().describe("gitRepo for clusters that name none."),
  resolveRefs: bool.default(D.resolveRefs).describe(
    "Pin every node to the commit ref resolves to (git ls-remote), so new commits roll out node by node.",
  ),
  refPollInterval: duration.default(D.refPollInterval).describe(
    "How often a tracked branch is checked for new commits.",
  ),
  nodeTimeout: duration.default(D.nodeTimeout).describe("A node not applied this long after a change is Failed."),
  nioGeneration: z.enum(["auto", "v1", "older"]).default("auto").describe(
    "Which NIO applies the configurations: auto (from NIO's NixosConfiguration CRD, else API discovery), v1 (the Go NIO) or older (the Python NIO).",
  ),
  workloadConnections: bool.default(true).describe(
    "Watch the clusters NICO builds (Nodes, /readyz) with their kubeconfig: Ready means the Node is Ready; drains.",
  ),
  maxWorkloadConnections: z.coerce.number().int().min(1).max(10_000).default(2_000)
    .describe("At most this many workload clusters are looked into at once."),
  maxWorkloadWatches: z.coerce.number().int().min(0).max(10_000).default(100).describe(
    "At most this many workload clusters (those needed most recently) watch their Nodes and keep their sockets open; the others are polled every probe interval.",
  ),
  workloadProbeInterval: duration.default(10_000).describe("How often each workload API's /readyz is asked."),
  etcdInterval: duration.default(D.etcdInterval).describe(
    "How often each cluster's etcd is looked at (members, status, alarms), with workload connections on.",
  ),
  etcdTimeout: duration.default(D.etcdTimeout).describe("Deadline of one request to an etcd member."),
  restoreUrlLifetime: duration.default(D.restoreUrlLifetime).refine(
    (ms) => ms >= 60_000 && ms <= 7 * 24 * 3_600_000,
    "expected from 1m to 168h (the longest an S3 presigned URL may be valid)",
  ).describe(
    "How long the backup's presigned URL given to the bootstrap node for a restore is valid: longer than its build and download take.",
  ),
  workloadAllowedCidrs: cidrs.describe(
    "Addresses and CIDR ranges NICO may reach for a cluster (API server, /version, etcd) though refused by default: loopback, link-local, NICO's own and --management-cidrs.",
  ),
  managementCidrs: cidrs.describe(
    "The management cluster's own ranges (its Service and Pod CIDRs): NICO never connects there for a cluster unless --workload-allowed-cidrs lists them.",
  ),
  webhookAddr: address.default(":9443").describe("Admission webhook listen address."),
  webhookCertMode: z.enum(["self-signed", "cert-manager", "off"]).default("self-signed")
    .describe("self-signed: NICO keeps its own CA; cert-manager: use mounted files; off: no webhook."),
  webhookCertDir: z.string().default("/tmp/k8s-webhook-server/serving-certs").describe(
    "Mounted tls.crt/tls.key for cert-manager mode.",
  ),
  webhookService: z.string().default("nico-webhook").describe("Service in front of the webhook (self-signed mode)."),
  webhookUrl: z.string().url().optional().describe("Register the webhook by URL instead of Service (local runs)."),
  gitAllowedHosts: z.string().default("*").refine((v) => {
    try {
      parseHostPolicy(v);
      return true;
    } catch {
      return false;
    }
  }, "expected a comma-separated list of host names, *.domain, addresses, CIDR ranges or *").describe(
    "Hosts a gitRepo may name: * (any host name or public address), names, *.domain, addresses, CIDRs; loopback, link-local and private addresses only when listed.",
  ),
  webhookClientCa: z.string().min(1).optional().describe(
    "CA bundle file: the webhook then requires a client certificate it signed (the API server's, see docs/operations.md).",
  ),
  argocdNamespace: z.string().regex(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/, "expected a namespace name").optional()
    .describe("Register every cluster with the Argo CD of this namespace (a cluster Secret each); default off."),
  argocdProject: z.string().regex(/^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/, "expected an Argo CD project name")
    .optional()
    .describe("The Argo CD project every registered cluster is scoped to (the Secret's project); default none."),
  argocdLabelKeys: z.string().default(D.argocdLabelKeys).refine(
    (v) => labelKeyList(v).every((k) => /^[A-Za-z0-9./_-]+\*?$/.test(k)),
    {
      message: "expected a comma-separated list of label keys, or prefixes ending in / or *",
    },
  ).describe(
    "Label keys of a cluster copied onto its Argo CD Secret (a key, or a prefix ending in / or *); default none.",
  ),
  metricsAddr: address.default(":8080").describe("Prometheus /metrics listen address."),
  healthAddr: address.default(":8081").describe("/healthz and /readyz listen address."),
  leaderElect: bool.default(true).describe("Only the Lease holder reconciles."),
  leaseNamespace: z.string().default("nico-system").describe("Namespace of the leader Lease (and webhook Secret)."),
  leaseName: z.string().default("nico-leader").describe("Name of the leader Lease."),
  identity: z.string().min(1).optional().describe(
    "This replica's name in the Lease and in Events; default host name plus a random suffix.",
  ),
  logLevel: z.enum(["debug", "info", "error"]).default("info").describe("Least severe log lines written."),
  logFormat: z.enum(["json", "text"]).default("json").describe("JSON lines, or text for people."),
  installCrds: bool.default(false).describe("Apply NICO's CRD at start (for development)."),
  kubeQps: z.coerce.number().positive().max(100_000).default(500).describe(
    "Client-side limit of API server requests a second (a token bucket; a runaway loop cannot flood the API server).",
  ),
  kubeBurst: z.coerce.number().int().min(1).max(100_000).default(1_000)
    .describe("Requests sent at once before --kube-qps applies."),
  kubeRetries: z.coerce.number().int().min(0).max(100).default(5).describe(
    "Times a request the API server throttled (429) is sent again, after the Retry-After it asks for.",
  ),
});

export type RunOptions = z.output<typeof RunOptions>;

const ENV: Record<string, string> = {
  kubeconfig: "KUBECONFIG",
  context: "NICO_KUBE_CONTEXT",
  allowInsecureKubeconfig: "NICO_ALLOW_INSECURE_KUBECONFIG",
  namespace: "NICO_NAMESPACE",
  shard: "NICO_SHARD",
  namespaceShards: "NICO_NAMESPACE_SHARDS",
  shardCheckInterval: "NICO_SHARD_CHECK_INTERVAL",
  workers: "NICO_WORKERS",
  defaultGitRepo: "NICO_DEFAULT_GIT_REPO",
  nodeTimeout: "NICO_NODE_TIMEOUT",
  nioGeneration: "NICO_NIO_GENERATION",
  resolveRefs: "NICO_RESOLVE_REFS",
  workloadConnections: "NICO_WORKLOAD_CONNECTIONS",
  maxWorkloadConnections: "NICO_MAX_WORKLOAD_CONNECTIONS",
  maxWorkloadWatches: "NICO_MAX_WORKLOAD_WATCHES",
  workloadProbeInterval: "NICO_WORKLOAD_PROBE_INTERVAL",
  etcdInterval: "NICO_ETCD_INTERVAL",
  etcdTimeout: "NICO_ETCD_TIMEOUT",
  restoreUrlLifetime: "NICO_RESTORE_URL_LIFETIME",
  workloadAllowedCidrs: "NICO_WORKLOAD_ALLOWED_CIDRS",
  managementCidrs: "NICO_MANAGEMENT_CIDRS",
  refPollInterval: "NICO_REF_POLL_INTERVAL",
  webhookAddr: "NICO_WEBHOOK_ADDR",
  webhookCertMode: "NICO_WEBHOOK_CERT_MODE",
  webhookCertDir: "NICO_WEBHOOK_CERT_DIR",
  webhookService: "NICO_WEBHOOK_SERVICE",
  webhookUrl: "NICO_WEBHOOK_URL",
  gitAllowedHosts: "NICO_GIT_ALLOWED_HOSTS",
  webhookClientCa: "NICO_WEBHOOK_CLIENT_CA",
  argocdNamespace: "NICO_ARGOCD_NAMESPACE",
  argocdProject: "NICO_ARGOCD_PROJECT",
  argocdLabelKeys: "NICO_ARGOCD_LABEL_KEYS",
  metricsAddr: "NICO_METRICS_ADDR",
  healthAddr: "NICO_HEALTH_ADDR",
  leaderElect: "NICO_LEADER_ELECT",
  leaseNamespace: "NICO_LEASE_NAMESPACE",
  leaseName: "NICO_LEASE_NAME",
  identity: "NICO_POD_NAME",
  logLevel: "NICO_LOG_LEVEL",
  logFormat: "NICO_LOG_FORMAT",
  installCrds: "NICO_INSTALL_CRDS",
  kubeQps: "NICO_KUBE_QPS",
  kubeBurst: "NICO_KUBE_BURST",
  kubeRetries: "NICO_KUBE_RETRIES",
};

const kebab = (k: string) => k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

/** Usage text, generated from the schema. */
export function usage(): string {
  const lines = ["Usage: nico run [flags]", "", "Flags (default and environment variable in brackets):"];
  for (const [key, schema] of Object.entries(RunOptions.shape)) {
    const text = [(schema as z.ZodType).description, choices(schema)].filter(Boolean).join(" ");
    const dflt = defaultText(schema);
    lines.push(`  --${kebab(key).padEnd(20)} ${text} [${dflt ? `default ${dflt}; ` : ""}${ENV[key]}]`);
  }
  return lines.join("\n");
}

/** The default of a flag as a person writes it (durations as 30m, not milliseconds). */
function defaultText(schema: unknown): string | undefined {
  const def = (schema as { def?: { type?: string; defaultValue?: unknown; innerType?: { def?: { type?: string } } } })
    .def;
  if (def?.type !== "default" || def.defaultValue === undefined) return undefined;
  const v = def.defaultValue;
  if (typeof v === "number" && def.innerType?.def?.type === "pipe") return formatDuration(v);
  return String(v);
}

/** The values an enum flag takes. */
function choices(schema: unknown): string | undefined {
  const inner = (schema as { def?: { innerType?: unknown } }).def?.innerType ?? schema;
  const entries = (inner as { def?: { type?: string; entries?: Record<string, string> } }).def;
  return entries?.type === "enum" && entries.entries ? `One of ${Object.keys(entries.entries).join(", ")}.` : undefined;
}

export class OptionsError extends Error {
  override readonly name = "OptionsError";
}

/** Parses `--flag value`, `--flag=value` and bare boolean `--flag`, over the environment. */
export function parseRunOptions(args: string[], env: Record<string, string | undefined>): RunOptions {
  const raw: Record<string, unknown> = {};
  for (const [key, name] of Object.entries(ENV)) if (env[name] !== undefined && env[name] !== "") raw[key] = env[name];
  const byFlag = new Map(Object.keys(RunOptions.shape).map((k) => [kebab(k), k]));
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (!arg.startsWith("--")) throw new OptionsError(`unexpected argument '${arg}'; flags start with --`);
    const [flag, inline] = arg.slice(2).split(/=(.*)/s, 2) as [string, string | undefined];
    const key = byFlag.get(flag);
    if (!key) throw new OptionsError(`unknown flag --${flag}; see nico run --help`);
    const isBool = key === "leaderElect" || key === "installCrds" || key === "resolveRefs" ||
      key === "workloadConnections";
    if (inline !== undefined) raw[key] = inline;
    else if (isBool && (args[i + 1] === undefined || args[i + 1]!.startsWith("--"))) raw[key] = "true";
    else if (args[i + 1] === undefined) throw new OptionsError(`flag --${flag} needs a value`);
    else raw[key] = args[++i];
  }
  const parsed = RunOptions.safeParse(raw);
  if (!parsed.success) {
    const msgs = parsed.error.issues.map((i) => {
      const key = String(i.path[0]);
      return `--${kebab(key)} (${ENV[key]}): ${i.message}; got ${JSON.stringify(raw[key])}`;
    });
    throw new OptionsError(msgs.join("\n"));
  }
  return parsed.data;
}

/** `host:port` to listen options; an empty host means every interface. */
export function listenOn(addr: string): { hostname: string; port: number } {
  const i = addr.lastIndexOf(":");
  const host = addr.slice(0, i).replace(/^\[|\]$/g, "");
  return { hostname: host || "0.0.0.0", port: Number(addr.slice(i + 1)) };
}

/**
 * What the workload flags give the cluster controller: its workload connections (etcd's knobs are settings); `own`
 * are addresses of NICO itself and of the management cluster it found (refused like --management-cidrs).
 */
export function workloadWatching(o: RunOptions, own: readonly string[] = []) {
  return {
    maxOpen: o.maxWorkloadConnections,
    maxWatches: o.maxWorkloadWatches,
    probeIntervalMs: o.workloadProbeInterval,
    policy: targetRules(o, own),
  };
}

/**
 * A flag that shares its name with a cluster setting (controllers/cluster/settings.ts) has the setting's type, so
 * cli/run.ts hands the parsed flags over whole: a type error here names a flag that would not fit.
 */
type Shared = keyof RunOptions & keyof ClusterSettings;
type Fits = { [K in Shared]: RunOptions[K] extends ClusterSettings[K] ? true : false }[Shared];
const _everyFlagFits: false extends Fits ? never : true = true;
void _everyFlagFits;

/** The target rules of the flags, with `own` addresses refused as the management cluster's. */
export function targetRules(o: Pick<RunOptions, "workloadAllowedCidrs" | "managementCidrs">, own: readonly string[]) {
  const deny = [o.managementCidrs, ...own].filter((e) => e !== "").join(",");
  return { allow: parseCidrList(o.workloadAllowedCidrs), deny: parseCidrList(deny) } satisfies TargetRules;
}
