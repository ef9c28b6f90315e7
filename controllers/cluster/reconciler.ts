/**
 * The KubernetesCluster reconciler: the thin shell around the pure core.
 *
 * Shape: get the cluster (gone: done) → ensure the finalizer → deleting?
 * `reconcileDelete` : `reconcileNormal` → write status once, only if it
 * changed. Reads come from the informers' caches; every write is either
 * version-checked or idempotent, so a stale cache costs a retry, never a
 * double-booked Machine.
 *
 * @module
 */
import { isDeepStrictEqual } from "node:util";
import {
  durationMs,
  type KubernetesCluster,
  KubernetesClusterSpec,
  type KubernetesClusterStatus,
} from "../../crds/kubernetescluster.ts";
import type { EventRecorder } from "../../lib/events.ts";
import type { KubeClient } from "../../lib/kube/client.ts";
import { isConflict, isNotFound } from "../../lib/kube/errors.ts";
import { KUBERNETES_CLUSTERS, NIXOS_CONFIGURATIONS, SECRETS } from "../../lib/kube/resources.ts";
import {
  BOOTSTRAP_LABEL,
  CLUSTER_LABEL,
  FINALIZER,
  PAUSED_ANNOTATION,
  REGENERATE_IDENTITY_ANNOTATION,
  ROLE_LABEL,
  SPEC_CHANGED_ANNOTATION,
  SPEC_HASH_ANNOTATION,
} from "../../core/labels.ts";
import type { Machine, NixosConfiguration } from "../../core/nio.ts";
import type { Informer } from "../../lib/runtime/informer.ts";
import { splitKey } from "../../lib/runtime/keys.ts";
import { errorMessage, type Logger, withFields } from "../../lib/runtime/log.ts";
import { claimMachine, releaseMachine } from "./claims.ts";
import { listNames, mergeConditions } from "../../core/conditions.ts";
import { clusterHash, desiredConfigurations, resolveEndpoint } from "../../core/desired.ts";
import { planRollout, type RolloutPlan } from "../../core/rollout.ts";
import { specDrift } from "../../core/drift.ts";
import { endpointUrl, publishedServer, readKubeconfig } from "../../core/kubeconfig.ts";
import { caKeySecret, caSecret, kubeconfigSecret, ownedSecretNames } from "../../core/names.ts";
import { type NodeReport, nodeReport, specChangedAt } from "../../core/readiness.ts";
import {
  ensureCa,
  ensureJoinToken,
  ensureKubeconfig,
  IdentityLostError,
  ownsSecret,
  type Secret,
  secretValue,
} from "./secrets.ts";
import { wasBootstrapped } from "../../core/identity.ts";
import { type ClusterRef, configNameOf, isOwnedBy, type Plane, selectMachines } from "../../core/selection.ts";
import { computeStatus } from "../../core/status.ts";
import type { RevisionTracker } from "./revisions.ts";
import type { ConditionInput } from "../../core/conditions.ts";

export interface ClusterInformers {
  clusters: Informer<KubernetesCluster>;
  machines: Informer<Machine>;
  configs: Informer<NixosConfiguration>;
  secrets: Informer<Secret>;
}

export interface ClusterReconcilerOptions {
  client: KubeClient;
  informers: ClusterInformers;
  recorder: EventRecorder;
  log: Logger;
  /** `gitRepo` for clusters that name none. */
  defaultGitRepo?: string | undefined;
  /** A node not applied this long after its last change is Failed (default 30 min). */
  nodeTimeoutMs?: number;
  /** Pins each node to the commit `ref` resolves to; absent: `ref` is passed to NIO as written. */
  revisions?: RevisionTracker | undefined;
  now?: () => Date;
}

const DEFAULT_NODE_TIMEOUT_MS = 30 * 60_000;
/** Look again this often while something is in flight, to notice deadlines. */
const BUSY_REQUEUE_MS = 60_000;
/** A pinned revision: a full commit id. */
const COMMIT = /^[0-9a-f]{40}$/;
/** Look again this often when all is well: kubeconfig renewal, nothing else. */
const IDLE_REQUEUE_MS = 12 * 60 * 60_000;

export class ClusterReconciler {
  readonly #o: ClusterReconcilerOptions;
  readonly #client: KubeClient;
  readonly #timeoutMs: number;
  readonly #now: () => Date;

  constructor(opts: ClusterReconcilerOptions) {
    this.#o = opts;
    this.#client = opts.client;
    this.#timeoutMs = opts.nodeTimeoutMs ?? DEFAULT_NODE_TIMEOUT_MS;
    this.#now = opts.now ?? (() => new Date());
  }

  /** Reconciles the cluster behind `namespace/name`. */
  async reconcile(key: string): Promise<{ requeueAfter?: number } | void> {
    const { namespace, name } = splitKey(key);
    const cluster = this.#o.informers.clusters.get(namespace, name);
    if (!cluster) return;
    const log = withFields(this.#o.log, { cluster: name, namespace, reconcileID: crypto.randomUUID().slice(0, 8) });
    if (cluster.metadata.deletionTimestamp) return await this.#reconcileDelete(cluster, log);
    if (!(cluster.metadata.finalizers ?? []).includes(FINALIZER)) {
      await this.#client.jsonPatch(KUBERNETES_CLUSTERS, name, namespace, [
        { op: "test", path: "/metadata/resourceVersion", value: cluster.metadata.resourceVersion },
        cluster.metadata.finalizers
          ? { op: "add", path: "/metadata/finalizers/-", value: FINALIZER }
          : { op: "add", path: "/metadata/finalizers", value: [FINALIZER] },
      ]);
      return; // the update event brings us back with the finalizer in place
    }
    return await this.#reconcileNormal(cluster, log);
  }

  async #reconcileNormal(cluster: KubernetesCluster, log: Logger): Promise<{ requeueAfter?: number }> {
    const { informers: inf, recorder } = this.#o;
    const client = this.#client;
    const now = this.#now();
    const ns = cluster.metadata.namespace!;
    const name = cluster.metadata.name;
    const generation = cluster.metadata.generation ?? 0;
    const ref: ClusterRef = { name, namespace: ns, uid: cluster.metadata.uid };

    const parsed = KubernetesClusterSpec.safeParse(cluster.spec);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      const message = `spec.${issue.path.join(".")}: ${issue.message}`;
      await this.#writeStatus(cluster, {
        ...cluster.status,
        phase: "Failed",
        observedGeneration: generation,
        conditions: mergeConditions(
          cluster.status?.conditions,
          [
            { type: "Ready", status: "False", reason: "InvalidSpec", message },
          ],
          generation,
          now,
        ),
      });
      return {};
    }
    const spec = parsed.data;
    const secretOf = (n: string) => inf.secrets.get(ns, n);

    const machines = inf.machines.list(ns);
    const byName = new Map(machines.map((m) => [m.metadata.name, m]));
    const configs = inf.configs.list(ns);
    const ours = configs.filter((c) => isOwnedBy(c, ref));

    // The identity is made once: on a cluster that has been brought up a missing Secret stops everything.
    const rekey = cluster.metadata.annotations?.[REGENERATE_IDENTITY_ANNOTATION] === "true";
    const policy = {
      mayCreate: rekey || !wasBootstrapped({
        owned: ours,
        machines,
        kubeconfigIssued: secretOf(kubeconfigSecret(name)) !== undefined,
      }),
    };
    let identity;
    try {
      const token = await ensureJoinToken(client, cluster, secretOf, policy);
      const ca = await ensureCa(client, cluster, secretOf, policy);
      identity = { token, ca };
    } catch (err) {
      if (!(err instanceof IdentityLostError)) throw err;
      return await this.#stop(cluster, err.reason, err.message, now, log);
    }
    const { token } = identity;
    const { ca, created: caCreated, keyRestored } = identity.ca;
    if (token.created) {
      await recorder.event(cluster, "Normal", "JoinTokenCreated", `created Secret ${token.secret.metadata.name}`);
    }
    if (caCreated) await recorder.event(cluster, "Normal", "CertificateAuthorityCreated", "created the cluster CA");
    if (keyRestored) {
      await recorder.event(
        cluster,
        "Warning",
        "CertificateAuthorityKeyRestored",
        `Secret ${caKeySecret(name)} did not hold the key of Secret ${caSecret(name)}; restored it from there`,
      );
    }
    if (rekey) {
      if (token.created || caCreated) {
        await recorder.event(
          cluster,
          "Warning",
          "IdentityRegenerated",
          `made a new ${[token.created && "join token", caCreated && "CA"].filter(Boolean).join(" and ")} as ` +
            `${REGENERATE_IDENTITY_ANNOTATION} asked; nodes are reconfigured with it`,
        );
      }
      await client.jsonPatch(KUBERNETES_CLUSTERS, name, ns, [
        { op: "remove", path: `/metadata/annotations/${REGENERATE_IDENTITY_ANNOTATION.replace("/", "~1")}` },
      ]).catch(() => undefined);
    }
    const recordedBootstrap = cluster.status?.bootstrapNode ??
      ours.find((c) => c.metadata.labels?.[BOOTSTRAP_LABEL] === "true")?.spec.machineRef.name;
    const nameOf = configNameOf(ref, configs);
    const selection = selectMachines({
      cluster: { ...ref, spec },
      machines,
      configurations: configs,
      bootstrap: recordedBootstrap,
      now,
    });
    const gitRepo = spec.gitRepo ?? this.#o.defaultGitRepo;
    // A cluster that cannot start (no repository) and has nothing yet holds no Machines: others may use them.
    const canStart = gitRepo !== undefined || ours.length > 0;
    const members = canStart ? [...selection.controlPlane.members, ...selection.dataPlane.members] : [];

    // Claim before creating anything: a lost race throws and we select again.
    const claimed: string[] = [];
    for (const member of members) {
      const m = byName.get(member);
      if (m && m.metadata.labels?.[CLUSTER_LABEL] !== name) {
        byName.set(member, await claimMachine(client, m, name));
        claimed.push(member);
      }
    }
    if (claimed.length) {
      log.info("claimed machines", { machines: claimed });
      await recorder.event(cluster, "Normal", "MachinesClaimed", `claimed ${listNames(claimed)}`);
    }

    const cpMembers = selection.controlPlane.members;
    const memberSet = new Set(members);
    // The bootstrap node stays the bootstrap while it is a member; a departing bootstrap node that is
    // still the API endpoint keeps the role until spec.controlPlaneEndpoint is set (the planner holds it).
    const recordedStays = recordedBootstrap !== undefined && (cpMembers.includes(recordedBootstrap) ||
      (!spec.controlPlaneEndpoint && cpMembers.length > 0 &&
        ours.some((c) => c.spec.machineRef.name === recordedBootstrap)));
    const bootstrap = recordedStays ? recordedBootstrap : cpMembers[0];
    const paused = spec.paused || cluster.metadata.annotations?.[PAUSED_ANNOTATION] === "true";
    const timeoutMs = spec.rollout.nodeTimeout ? durationMs(spec.rollout.nodeTimeout) : this.#timeoutMs;
    const written = new Map<string, NixosConfiguration>();
    const wantedHash = new Map<string, string>();
    const wantedSpec = new Map<string, NixosConfiguration["spec"]>();
    let endpoint: string | undefined;
    let blocked: { reason: string; message: string } | undefined;
    let plan: RolloutPlan | undefined;
    const report = (machine: string, plane: Plane) => {
      const cn = nameOf(machine);
      return nodeReport({
        machine,
        plane,
        cluster: ref,
        desired: wantedSpec.get(cn),
        config: written.get(cn) ?? inf.configs.get(ns, cn),
        machineObj: byName.get(machine),
        now,
        timeoutMs,
      });
    };
    const reportAll = () => [
      ...selection.controlPlane.members.map((m) => report(m, "controlPlane")),
      ...selection.dataPlane.members.map((m) => report(m, "dataPlane")),
    ];
    const ep = bootstrap ? resolveEndpoint(spec, byName.get(bootstrap), bootstrap) : undefined;
    const pin = gitRepo ? this.#pinnedRevision(cluster, spec, gitRepo, ours) : { extra: [] };
    if (!gitRepo) {
      blocked = { reason: "NoGitRepo", message: "no gitRepo: set spec.gitRepo, or run NICO with --default-git-repo" };
    } else if (pin.blocked) {
      blocked = pin.blocked;
    } else if (!bootstrap || !ep) {
      blocked = { reason: "NoControlPlane", message: "no control plane machine is available; see MachinesAvailable" };
    } else if (ep.error) {
      blocked = { reason: "InvalidEndpoint", message: `${ep.error}; fix it so NICO can build the kubeconfig` };
    } else {
      endpoint = endpointUrl(ep.host, ep.port);
      const desired = desiredConfigurations({
        cluster: { ...ref, uid: cluster.metadata.uid!, spec },
        selection,
        machines: [...byName.values()],
        bootstrap,
        endpoint: ep,
        nameOf,
        gitRepo: pin.gitRepo ?? gitRepo,
        revision: pin.revision,
      });
      for (const d of desired) {
        wantedHash.set(d.metadata.name, d.metadata.annotations![SPEC_HASH_ANNOTATION]!);
        wantedSpec.set(d.metadata.name, d.spec);
      }
      const before = reportAll();
      plan = planRollout({
        nodes: before.map((n) => ({
          machine: n.machine,
          plane: n.plane,
          exists: n.state !== "Pending",
          upToDate: n.upToDate,
          available: n.state === "Ready",
          failed: n.state === "Failed",
          detail: n.detail,
        })),
        departing: ours.filter((c) => !memberSet.has(c.spec.machineRef.name)).map((c) => ({
          machine: c.spec.machineRef.name,
          plane: c.metadata.labels?.[ROLE_LABEL] === "control-plane" ? "controlPlane" as const : "dataPlane" as const,
          deleting: c.metadata.deletionTimestamp !== undefined,
        })),
        bootstrap,
        order: spec.rollout.order,
        maxUnavailable: spec.rollout.maxUnavailable,
        paused,
        endpointIsBootstrap: !spec.controlPlaneEndpoint,
      });
      const renderNow = new Set([...plan.create, ...plan.update]);
      if (!paused) {
        for (const d of desired) {
          const w = await this.#applyConfiguration(
            cluster,
            d,
            inf.configs.get(ns, d.metadata.name),
            ref,
            now,
            log,
            renderNow.has(d.spec.machineRef.name),
          );
          if (w) written.set(d.metadata.name, w);
        }
        // Departing nodes the planner lets go: delete their configurations (NIO then runs #minimal).
        for (const machine of plan.remove) {
          const c = ours.find((x) => x.spec.machineRef.name === machine)!;
          if (await client.delete(NIXOS_CONFIGURATIONS, c.metadata.name, ns, { uid: c.metadata.uid! })) {
            log.info("deleted configuration of a departed node", { configuration: c.metadata.name });
            await recorder.event(
              cluster,
              "Normal",
              "ConfigurationDeleted",
              `deleted NixosConfiguration ${c.metadata.name}`,
            );
          }
        }
      }
    }

    // Claims on Machines that are neither members nor still being cleaned up by NIO.
    const busy = new Set(ours.map((c) => c.spec.machineRef.name));
    const released: string[] = [];
    if (!paused) {
      for (const m of machines) {
        const n = m.metadata.name;
        if (m.metadata.labels?.[CLUSTER_LABEL] !== name || memberSet.has(n) || busy.has(n)) continue;
        if (await releaseMachine(client, m, name)) released.push(n);
      }
    }
    if (released.length) await recorder.event(cluster, "Normal", "MachinesReleased", `released ${listNames(released)}`);

    const nodes: NodeReport[] = blocked ? [] : reportAll();

    // The kubeconfig, once the bootstrap node is up; re-signed when needed.
    let kubeconfig: string | undefined;
    let endpointMove: ConditionInput | undefined;
    const bootstrapReady = nodes.some((n) => n.machine === bootstrap && n.state === "Ready");
    if (bootstrapReady && endpoint) {
      const published = secretValue(secretOf(kubeconfigSecret(name)), "value");
      const cpNodes = nodes.filter((n) => n.plane === "controlPlane");
      const served = cpNodes.length > 0 && cpNodes.every((n) => n.state === "Ready" && n.upToDate);
      const current = published ? readKubeconfig(published)?.server : undefined;
      const target = publishedServer(current, endpoint, served);
      endpointMove = target.moving
        ? {
          type: "KubeconfigCurrent",
          status: "False",
          reason: "WaitingForControlPlane",
          message: `the kubeconfig keeps ${target.server} until every control-plane node runs the configuration ` +
            `with ${endpoint} (${cpNodes.filter((n) => n.state === "Ready" && n.upToDate).length}/${cpNodes.length})`,
        }
        : {
          type: "KubeconfigCurrent",
          status: "True",
          reason: "EndpointServed",
          message: `the kubeconfig names ${endpoint}`,
        };
      const why = await ensureKubeconfig(client, cluster, target.server, ca, secretOf, now);
      if (why) {
        log.info("issued kubeconfig", { reason: why, secret: kubeconfigSecret(name) });
        await recorder.event(cluster, "Normal", "KubeconfigIssued", `wrote Secret ${kubeconfigSecret(name)} (${why})`);
      }
      kubeconfig = kubeconfigSecret(name);
    } else if (secretOf(kubeconfigSecret(name))) {
      kubeconfig = kubeconfigSecret(name);
    }

    const status = computeStatus({
      rollout: plan && {
        plan,
        paused,
        specHash: clusterHash([...wantedHash.values()]),
        controlPlaneSize: cpMembers.length,
      },
      generation,
      previous: cluster.status,
      deleting: false,
      selection,
      nodes,
      bootstrap,
      endpoint,
      kubeconfigSecret: kubeconfig,
      blocked,
      revision: pin.revision,
      extra: [...pin.extra, ...(endpointMove ? [endpointMove] : [])],
      now,
    });
    await this.#writeStatus(cluster, status);
    if (status.phase !== cluster.status?.phase) {
      log.info("phase changed", { from: cluster.status?.phase, to: status.phase });
      const ready = status.conditions?.find((c) => c.type === "Ready");
      await recorder.event(
        cluster,
        status.phase === "Failed" ? "Warning" : "Normal",
        `Phase${status.phase}`,
        `phase ${cluster.status?.phase ?? "(none)"} -> ${status.phase}: ${ready?.message ?? ""}`,
      );
    }
    const inFlight = nodes.filter((n) => n.state !== "Ready" && n.state !== "Failed");
    if (!inFlight.length && !blocked) return { requeueAfter: IDLE_REQUEUE_MS };
    // Look again by the earliest node deadline, so a timeout is reported when it happens.
    let next = BUSY_REQUEUE_MS;
    for (const n of inFlight) {
      const cfg = written.get(nameOf(n.machine)) ?? inf.configs.get(ns, nameOf(n.machine));
      const changed = cfg && specChangedAt(cfg);
      if (changed) next = Math.min(next, Math.max(1000, changed.getTime() + timeoutMs - now.getTime() + 1000));
    }
    return { requeueAfter: next };
  }

  /**
   * The (repository, commit) pair every node is pinned to. While the current
   * pair's resolution is pending or failing, nodes keep the pair they already
   * carry, repository and commit together (nothing rolls, and a new
   * repository is never paired with the old one's commit); a new cluster
   * waits. With no resolver, `ref` goes to NIO as written.
   */
  #pinnedRevision(
    cluster: KubernetesCluster,
    spec: KubernetesClusterSpec,
    gitRepo: string,
    ours: NixosConfiguration[],
  ): {
    revision?: string;
    gitRepo?: string;
    blocked?: { reason: string; message: string };
    extra: ConditionInput[];
  } {
    const tracker = this.#o.revisions;
    const ns = cluster.metadata.namespace!;
    if (!tracker) return { extra: [] };
    const ref = spec.ref ?? "the default branch";
    const rev = tracker.lookup(`${ns}/${cluster.metadata.name}`, {
      url: gitRepo,
      ref: spec.ref,
      credentialsSecret: spec.credentialsRef ? { namespace: ns, name: spec.credentialsRef.name } : undefined,
    });
    if (rev.commit && !rev.error) {
      return {
        revision: rev.commit,
        extra: [{
          type: "RevisionResolved",
          status: "True",
          reason: "Resolved",
          message: `${ref} is commit ${rev.commit}`,
        }],
      };
    }
    // A commit that resolved for this very key before keeps its pair; otherwise the pair the nodes carry.
    const carried = new Map(
      ours.filter((c) => c.spec.ref && COMMIT.test(c.spec.ref)).map((c) => [`${c.spec.gitRepo} ${c.spec.ref}`, c]),
    );
    const only = carried.size === 1 ? [...carried.values()][0] : undefined;
    const held = rev.commit
      ? { gitRepo, revision: rev.commit }
      : only && { gitRepo: only.spec.gitRepo, revision: only.spec.ref! };
    const where = held
      ? `; nodes stay on ${held.revision}${held.gitRepo !== gitRepo ? ` of ${held.gitRepo}` : ""}`
      : "";
    const condition: ConditionInput = rev.error
      ? { type: "RevisionResolved", status: "False", reason: "ResolveFailed", message: `${rev.error}${where}` }
      : {
        type: "RevisionResolved",
        status: "Unknown",
        reason: "Resolving",
        message: `resolving ${ref} of ${gitRepo}${where}`,
      };
    if (held) return { ...held, extra: [condition] };
    return {
      blocked: { reason: rev.error ? "RefResolutionFailed" : "ResolvingRef", message: condition.message },
      extra: [condition],
    };
  }

  /** Creates or updates one configuration; answers what the server now has, or undefined when untouched. */
  async #applyConfiguration(
    cluster: KubernetesCluster,
    desired: NixosConfiguration,
    existing: NixosConfiguration | undefined,
    ref: ClusterRef,
    now: Date,
    log: Logger,
    renderSpec: boolean,
  ): Promise<NixosConfiguration | undefined> {
    const client = this.#client;
    const ns = ref.namespace;
    const stamp = { [SPEC_CHANGED_ANNOTATION]: now.toISOString() };
    if (!existing) {
      if (!renderSpec) return undefined;
      const obj = {
        ...desired,
        metadata: { ...desired.metadata, annotations: { ...desired.metadata.annotations, ...stamp } },
      };
      const created = await client.create(NIXOS_CONFIGURATIONS, obj).catch(async (err) => {
        if (!isConflict(err)) throw err;
        return await client.get<NixosConfiguration>(NIXOS_CONFIGURATIONS, desired.metadata.name, ns);
      });
      log.info("created configuration", { configuration: desired.metadata.name });
      await this.#o.recorder.event(
        cluster,
        "Normal",
        "ConfigurationCreated",
        `created NixosConfiguration ${desired.metadata.name}`,
      );
      return created;
    }
    if (!isOwnedBy(existing, ref)) {
      throw new Error(
        `NixosConfiguration ${existing.metadata.name} exists but does not belong to this cluster; delete it or remove its Machine from the cluster`,
      );
    }
    // The spec changes only when the rollout planner says so; labels and owner follow at once.
    // Judged by content: a hand edit of a field NICO owns is repaired (as a rollout step, when the planner says so).
    const drift = specDrift(existing.spec, desired.spec);
    const hashChanged = renderSpec && drift.length > 0;
    const labelsChanged =
      Object.entries(desired.metadata.labels ?? {}).some(([k, v]) => existing.metadata.labels?.[k] !== v) ||
      (existing.metadata.labels?.[BOOTSTRAP_LABEL] !== undefined &&
        desired.metadata.labels?.[BOOTSTRAP_LABEL] === undefined);
    if (!hashChanged && !labelsChanged) return existing;
    const labels = { ...existing.metadata.labels, ...desired.metadata.labels };
    if (!desired.metadata.labels?.[BOOTSTRAP_LABEL]) delete labels[BOOTSTRAP_LABEL];
    const { status: _status, ...rest } = existing;
    const updated = await client.replace<NixosConfiguration>(NIXOS_CONFIGURATIONS, {
      ...rest,
      metadata: {
        ...existing.metadata,
        labels,
        annotations: hashChanged
          ? { ...existing.metadata.annotations, ...desired.metadata.annotations, ...stamp }
          : existing.metadata.annotations ?? {},
        ownerReferences: desired.metadata.ownerReferences!,
      },
      spec: hashChanged ? desired.spec : existing.spec,
    });
    if (hashChanged) {
      const edited =
        existing.metadata.annotations?.[SPEC_HASH_ANNOTATION] === desired.metadata.annotations?.[SPEC_HASH_ANNOTATION];
      if (edited) {
        await this.#o.recorder.event(
          cluster,
          "Warning",
          "ConfigurationDriftRepaired",
          `NixosConfiguration ${desired.metadata.name} was edited by hand (${
            drift.map((f) => `spec.${f}`).join(", ")
          }); restored NICO's value`,
        );
      }
      log.info("updated configuration", { configuration: desired.metadata.name, fields: drift });
      await this.#o.recorder.event(
        cluster,
        "Normal",
        "ConfigurationUpdated",
        `updated NixosConfiguration ${desired.metadata.name}`,
      );
    }
    return updated;
  }

  async #reconcileDelete(cluster: KubernetesCluster, log: Logger): Promise<{ requeueAfter?: number } | void> {
    if (!(cluster.metadata.finalizers ?? []).includes(FINALIZER)) return;
    const { informers: inf, recorder } = this.#o;
    const client = this.#client;
    const ns = cluster.metadata.namespace!;
    const name = cluster.metadata.name;
    const ref: ClusterRef = { name, namespace: ns, uid: cluster.metadata.uid };
    const now = this.#now();
    const generation = cluster.metadata.generation ?? 0;

    const ours = inf.configs.list(ns).filter((c) => isOwnedBy(c, ref));
    for (const c of ours) {
      if (c.metadata.deletionTimestamp) continue;
      if (await client.delete(NIXOS_CONFIGURATIONS, c.metadata.name, ns, { uid: c.metadata.uid! })) {
        await recorder.event(
          cluster,
          "Normal",
          "ConfigurationDeleted",
          `deleted NixosConfiguration ${c.metadata.name}`,
        );
      }
    }
    if (ours.length) {
      const waiting = `waiting for NIO to remove ${ours.length} configuration(s): ${
        listNames(ours.map((c) => c.metadata.name))
      }`;
      await this.#writeStatus(cluster, {
        ...cluster.status,
        phase: "Deleting",
        observedGeneration: generation,
        conditions: mergeConditions(
          cluster.status?.conditions,
          [
            { type: "Ready", status: "False", reason: "Deleting", message: waiting },
          ],
          generation,
          now,
        ),
      });
      log.info("deleting: waiting for NIO", { remaining: ours.length });
      return { requeueAfter: BUSY_REQUEUE_MS };
    }

    const released: string[] = [];
    for (const m of inf.machines.byLabel(CLUSTER_LABEL, name, ns)) {
      if (await releaseMachine(client, m, name)) released.push(m.metadata.name);
    }
    if (released.length) await recorder.event(cluster, "Normal", "MachinesReleased", `released ${listNames(released)}`);

    for (const secretName of ownedSecretNames(name)) {
      const s = inf.secrets.get(ns, secretName) ?? await client.get<Secret>(SECRETS, secretName, ns);
      if (s && ownsSecret(s, cluster)) await client.delete(SECRETS, secretName, ns, { uid: s.metadata.uid! });
    }

    const fresh = await client.get<KubernetesCluster>(KUBERNETES_CLUSTERS, name, ns);
    if (!fresh) return;
    const finalizers = fresh.metadata.finalizers ?? [];
    await client.jsonPatch(KUBERNETES_CLUSTERS, name, ns, [
      { op: "test", path: "/metadata/finalizers", value: finalizers },
      { op: "replace", path: "/metadata/finalizers", value: finalizers.filter((f) => f !== FINALIZER) },
    ]);
    this.#o.revisions?.release(`${ns}/${name}`);
    log.info("released every machine and removed the finalizer", { released: released.length });
  }

  /** Stops at a problem the user must fix: Ready=False with the reason, phase Failed, and a Warning Event. */
  async #stop(
    cluster: KubernetesCluster,
    reason: string,
    message: string,
    now: Date,
    log: Logger,
  ): Promise<{ requeueAfter?: number }> {
    const generation = cluster.metadata.generation ?? 0;
    const known = cluster.status?.conditions?.find((c) => c.type === "Ready");
    await this.#writeStatus(cluster, {
      ...cluster.status,
      phase: "Failed",
      observedGeneration: generation,
      conditions: mergeConditions(
        cluster.status?.conditions,
        [{ type: "Ready", status: "False", reason, message }],
        generation,
        now,
      ),
    });
    if (known?.reason !== reason || known.message !== message) {
      log.info("stopped", { reason });
      await this.#o.recorder.event(cluster, "Warning", reason, message);
    }
    return { requeueAfter: BUSY_REQUEUE_MS };
  }

  /** Writes status through the subresource when it differs from what is stored. */
  async #writeStatus(cluster: KubernetesCluster, status: KubernetesClusterStatus): Promise<void> {
    if (isDeepStrictEqual(stripUndefined(status), stripUndefined(cluster.status ?? {}))) return;
    const nulls: Record<string, null> = {};
    for (const k of Object.keys(cluster.status ?? {})) if (!(k in status)) nulls[k] = null;
    try {
      await this.#client.mergePatch(
        KUBERNETES_CLUSTERS,
        cluster.metadata.name,
        cluster.metadata.namespace,
        { status: { ...nulls, ...status } },
        "status",
      );
    } catch (err) {
      if (isNotFound(err)) return;
      throw new Error(`Cannot write status: ${errorMessage(err)}`, { cause: err });
    }
  }
}

function stripUndefined<T>(v: T): T {
  return JSON.parse(JSON.stringify(v));
}
