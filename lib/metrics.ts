/**
 * Prometheus metrics, with the names people already graph for controllers
 * (controller-runtime's) plus NICO's own, written by lib/prom.ts.
 *
 * @module
 */
import { Counter, Gauge, Histogram, Registry } from "./prom.ts";
import type { ControllerHooks, ReconcileOutcome } from "./runtime/controller.ts";

const RECONCILE_OUTCOMES: readonly ReconcileOutcome[] = ["success", "requeue", "error", "terminal"];

export class Metrics {
  readonly registry = new Registry();
  readonly reconcileTotal = new Counter({
    name: "controller_runtime_reconcile_total",
    help: "Reconciles per controller and result (success, requeue, error, terminal).",
    labelNames: ["controller", "result"] as const,
    registers: [this.registry],
  });
  readonly reconcileErrors = new Counter({
    name: "controller_runtime_reconcile_errors_total",
    help: "Reconciles that failed and will be retried.",
    labelNames: ["controller"] as const,
    registers: [this.registry],
  });
  readonly reconcileTime = new Histogram({
    name: "controller_runtime_reconcile_time_seconds",
    help: "Time per reconcile.",
    labelNames: ["controller"] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [this.registry],
  });
  readonly queueDepth = new Gauge({
    name: "workqueue_depth",
    help: "Keys waiting in the work queue.",
    labelNames: ["name"] as const,
    registers: [this.registry],
  });
  readonly queueAdds = new Counter({
    name: "workqueue_adds_total",
    help: "Keys added to the work queue.",
    labelNames: ["name"] as const,
    registers: [this.registry],
  });
  readonly queueRetries = new Counter({
    name: "workqueue_retries_total",
    help: "Rate-limited retries.",
    labelNames: ["name"] as const,
    registers: [this.registry],
  });
  readonly queueDuration = new Histogram({
    name: "workqueue_queue_duration_seconds",
    help: "Time a key waits before a worker takes it.",
    labelNames: ["name"] as const,
    buckets: [0.001, 0.01, 0.1, 1, 10, 60, 600],
    registers: [this.registry],
  });
  readonly workDuration = new Histogram({
    name: "workqueue_work_duration_seconds",
    help: "Time a worker holds a key.",
    labelNames: ["name"] as const,
    buckets: [0.001, 0.01, 0.1, 1, 10, 60],
    registers: [this.registry],
  });
  readonly clusters = new Gauge({
    name: "nico_clusters",
    help: "KubernetesClusters by phase.",
    labelNames: ["phase"] as const,
    registers: [this.registry],
  });
  readonly nodes = new Gauge({
    name: "nico_nodes",
    help: "Nodes by cluster, plane and state (ready or not_ready).",
    labelNames: ["namespace", "cluster", "plane", "state"] as const,
    registers: [this.registry],
  });
  readonly clusterCondition = new Gauge({
    name: "nico_cluster_condition",
    help: "1 for each condition a KubernetesCluster carries, by its type, status and reason " +
      "(only the types and reasons NICO registers; any other reason is Unregistered).",
    labelNames: ["namespace", "cluster", "type", "status", "reason"] as const,
    registers: [this.registry],
  });
  readonly kubeconfigExpiry = new Gauge({
    name: "nico_cluster_kubeconfig_expiry_timestamp_seconds",
    help: "When the client certificate of a cluster's <cluster>-kubeconfig Secret expires (Unix seconds).",
    labelNames: ["namespace", "cluster"] as const,
    registers: [this.registry],
  });
  readonly backupLastSuccess = new Gauge({
    name: "nico_etcd_backup_last_success_timestamp_seconds",
    help: "When the newest etcd backup of a cluster began (Unix seconds; spec.etcd.backup set, one known).",
    labelNames: ["namespace", "cluster"] as const,
    registers: [this.registry],
  });
  readonly backupSince = new Gauge({
    name: "nico_etcd_backup_since_timestamp_seconds",
    help: "When NICO began keeping etcd backups of a cluster (Unix seconds).",
    labelNames: ["namespace", "cluster"] as const,
    registers: [this.registry],
  });
  readonly backupInterval = new Gauge({
    name: "nico_etcd_backup_schedule_interval_seconds",
    help: "The time between two scheduled etcd backups of a cluster (spec.etcd.backup.schedule; absent: none).",
    labelNames: ["namespace", "cluster"] as const,
    registers: [this.registry],
  });
  readonly backupDuration = new Gauge({
    name: "nico_etcd_backup_last_duration_seconds",
    help: "How long the newest etcd backup of a cluster took to take and upload.",
    labelNames: ["namespace", "cluster"] as const,
    registers: [this.registry],
  });
  readonly backupBytes = new Gauge({
    name: "nico_etcd_backup_last_size_bytes",
    help: "The size of the newest etcd backup of a cluster.",
    labelNames: ["namespace", "cluster"] as const,
    registers: [this.registry],
  });
  readonly backupFailures = new Gauge({
    name: "nico_etcd_backup_failures",
    help: "etcd backup attempts of a cluster that failed in a row (0 once one succeeds).",
    labelNames: ["namespace", "cluster"] as const,
    registers: [this.registry],
  });
  readonly webhookRequests = new Counter({
    name: "nico_webhook_requests_total",
    help: "Admission requests by path and outcome (allowed, denied, error).",
    labelNames: ["path", "outcome"] as const,
    registers: [this.registry],
  });
  readonly webhookLatency = new Histogram({
    name: "nico_webhook_request_duration_seconds",
    help: "Admission request latency.",
    labelNames: ["path"] as const,
    // Up to the handler's 10 s deadline: with 1 s the last bound, no quantile could ever pass 1 s.
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });
  /** The process's memory, read at each scrape: what the Deployment's memory limit is measured against, split by kind. */
  readonly memory = new Gauge({
    name: "nico_process_memory_bytes",
    help: "Memory of the NICO process by kind: rss (resident), heap_total and heap_used (V8's heap), " +
      "external (memory outside the heap that its objects hold).",
    labelNames: ["kind"] as const,
    registers: [this.registry],
    collect() {
      const m = Deno.memoryUsage();
      this.set({ kind: "rss" }, m.rss);
      this.set({ kind: "heap_total" }, m.heapTotal);
      this.set({ kind: "heap_used" }, m.heapUsed);
      this.set({ kind: "external" }, m.external);
    },
  });
  readonly unowned = new Gauge({
    name: "nico_clusters_unowned",
    help: "Clusters labelled for a shard no NICO runs, as the default shard's leader last counted them " +
      "(every --shard-check-interval): nothing reconciles them, and their own metrics are gone.",
    registers: [this.registry],
  });
  readonly leader = new Gauge({
    name: "leader_election_master_status",
    help: "1 when this replica holds the leader Lease.",
    labelNames: ["name"] as const,
    registers: [this.registry],
  });

  /** Hooks that feed a {@link Controller}'s metrics. */
  controllerHooks(controller: string): ControllerHooks {
    // Counters start at zero (as controller-runtime's do): a rate sees the first error, and an alert on it has
    // a series to read before anything failed.
    for (const result of RECONCILE_OUTCOMES) this.reconcileTotal.inc({ controller, result }, 0);
    this.reconcileErrors.inc({ controller }, 0);
    this.queueRetries.inc({ name: controller }, 0);
    return {
      reconciled: (outcome, seconds) => {
        this.reconcileTotal.inc({ controller, result: outcome });
        if (outcome === "error") this.reconcileErrors.inc({ controller });
        this.reconcileTime.observe({ controller }, seconds);
      },
      queue: {
        add: () => this.queueAdds.inc({ name: controller }),
        retry: () => this.queueRetries.inc({ name: controller }),
        depth: (d) => this.queueDepth.set({ name: controller }, d),
        queueDuration: (s) => this.queueDuration.observe({ name: controller }, s),
        workDuration: (s) => this.workDuration.observe({ name: controller }, s),
      },
    };
  }

  /** The text exposition format. */
  async text(): Promise<string> {
    return await this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
