/**
 * One connection to a workload cluster: a background `/readyz` probe with
 * NICO's credentials, its Nodes (watched while the cluster is among those NICO
 * needed most recently, else listed once per probe round: ./nodes.ts), an
 * informer on Pods only while a drain asks for them, and each control-plane
 * node's own `/version` (./versions.ts). A polled connection closes its
 * sockets and TLS state after each round; the next request opens them again.
 * Everything a reconcile reads is in memory, with the time it was last
 * confirmed: a slow or absent workload API never blocks it.
 *
 * @module
 */
import type { KubeClient } from "../../../lib/kube/client.ts";
import { PODS } from "../../../lib/kube/resources.ts";
import { Informer } from "../../../lib/runtime/informer.ts";
import { errorMessage, type Logger } from "../../../lib/runtime/log.ts";
import { sleep } from "../../../lib/runtime/sleep.ts";
import { DRAIN_STARTED_ANNOTATION } from "../../../core/contract/labels.ts";
import { type KubeNode, type KubePod, type NodeView, viewNode } from "../../../core/nodes/workload.ts";
import { type ApiServerAnswer, type ApiServerTarget, ApiServerVersions } from "./versions.ts";
import { NodeSource } from "./nodes.ts";
import type { Rounds } from "./rounds.ts";

export type ApiState = "Available" | "Unavailable" | "Unknown";

/** What NICO knows about a workload cluster right now. */
export interface WorkloadView {
  api: {
    state: ApiState;
    message: string;
    /** Since when `state` holds. */
    since: Date;
    /** The last answer from `/readyz` (any answer). */
    checkedAt?: Date | undefined;
    /**
     * The last time it was away and came back (not the first connection): when it went away, when it returned,
     * and the Nodes as last seen before it went away.
     */
    outage?: { from: Date; to: Date; nodes?: Map<string, NodeView> | undefined } | undefined;
  };
  /** Nodes as last seen; `undefined` until the first list succeeded. */
  nodes?: Map<string, NodeView> | undefined;
  /** When the Node cache was last known current (the last good probe after the first list). */
  nodesAsOf?: Date | undefined;
}

export interface ConnectionOptions {
  client: KubeClient;
  /** Something NICO cares about changed: the API's availability, a Node. */
  onChange: () => void;
  probeIntervalMs: number;
  /** Pods are no longer watched this long after the last drain asked for them. */
  podsIdleMs: number;
  log: Logger;
  now: () => Date;
  /** A client for one control-plane node's own API server (`https://host:6443`); absent: none is asked. */
  nodeClient?: ((server: string) => KubeClient) | undefined;
  /** How often each control-plane node's `/version` is asked again (default 15 s). */
  versionIntervalMs?: number | undefined;
  /** NICO needs this cluster now (a drain, a Node write, an apply, a change seen): see core/nodes/watches.ts. */
  onNeeded?: (() => void) | undefined;
  /** Takes turns for the rounds of a polled connection (./rounds.ts); absent: no turns. */
  rounds?: Rounds | undefined;
}

/** A live connection; made and closed by {@link WorkloadCache}. */
export class WorkloadConnection {
  readonly client: KubeClient;
  readonly #o: ConnectionOptions;
  readonly #abort = new AbortController();
  readonly #nodes: NodeSource;
  /** Pod informers by node, one per node being drained (a field selector: only that node's Pods). */
  readonly #pods = new Map<string, { informer: Informer<KubePod>; usedAt: number }>();
  #api: WorkloadView["api"];
  #lastGood: Date | undefined;
  /** The Node informer's list and error counts when the API last went away (see {@link view}). */
  #atOutage: { lists: number; errors: number } | undefined;
  /** The Nodes as last seen when the API went away. */
  #nodesAtOutage: Map<string, NodeView> | undefined;
  #loop: Promise<void> | undefined;
  readonly #versions: ApiServerVersions | undefined;
  #versionLoop: Promise<void> | undefined;

  constructor(o: ConnectionOptions) {
    this.#o = o;
    this.client = o.client;
    this.#api = { state: "Unknown", message: "connecting", since: o.now() };
    this.#nodes = new NodeSource(o.client, {
      informer: this.#informerOptions(),
      log: o.log,
      onChange: (first) => {
        o.onChange();
        if (!first) o.onNeeded?.();
      },
    });
    this.#versions = o.nodeClient && new ApiServerVersions({
      client: o.nodeClient,
      timeoutMs: Math.min(2_000, o.probeIntervalMs),
      now: o.now,
      onChange: o.onChange,
      log: o.log,
    });
  }

  #informerOptions() {
    // A short back-off: once the API is back, Nodes are known again within seconds.
    return { logger: this.#o.log, resyncMs: 0, minBackoffMs: 1_000, maxBackoffMs: 5_000 };
  }

  /** Starts the probe, and the Node watch if `watch` (else the Nodes are polled). */
  start(watch = true): void {
    if (watch) this.#nodes.watch(this.#abort.signal);
    this.#loop = this.#probeLoop();
    if (this.#versions) this.#versionLoop = this.#askVersions(this.#versions);
  }

  /** Whether the Nodes are watched (else polled, and the sockets closed between rounds). */
  get watching(): boolean {
    return this.#nodes.watching;
  }

  /** Watches the Nodes from now on, or polls them (closing the sockets between rounds). */
  async setWatching(on: boolean): Promise<void> {
    if (on) return this.#nodes.watch(this.#abort.signal);
    await this.#nodes.unwatch();
    await this.#release();
  }

  /** One round of requests: a polled connection takes its turn for it, and closes its sockets after it. */
  async #round<T>(fn: () => Promise<T>): Promise<T> {
    if (this.#nodes.watching || !this.#o.rounds) return await fn().finally(() => this.#release());
    return await this.#o.rounds.run(() => fn().finally(() => this.#release()));
  }

  /** A polled connection with no drain under way closes its sockets and TLS state; the next request reopens them. */
  async #release(): Promise<void> {
    if (!this.#nodes.watching && this.#pods.size === 0 && !this.#abort.signal.aborted) await this.client.close();
  }

  async #askVersions(versions: ApiServerVersions): Promise<void> {
    const signal = this.#abort.signal;
    while (!signal.aborted) {
      await sleep(this.#o.versionIntervalMs ?? 15_000, signal);
      if (!signal.aborted) await this.#round(() => versions.askAll());
    }
  }

  /**
   * The last answer of each control-plane node's own API server to `/version`, by machine; `targets` are the
   * nodes to ask from now on (see ./versions.ts). Never waits on the network.
   */
  apiServerVersions(targets: readonly ApiServerTarget[]): Map<string, ApiServerAnswer> {
    if (!this.#versions) return new Map();
    const answers = this.#versions.answers(targets);
    // A node that applied since its last answer: a rollout is under way here.
    if (targets.some((t) => t.since !== undefined && (answers.get(t.machine)?.at ?? t.since) < t.since)) {
      this.#o.onNeeded?.();
    }
    return answers;
  }

  async #probeLoop(): Promise<void> {
    const signal = this.#abort.signal;
    let failures = 0;
    while (!signal.aborted) {
      const ok = await this.#round(async () => {
        const ok = await this.probe();
        if (ok) await this.#nodes.poll(this.#o.now(), signal);
        else this.#nodes.missed();
        return ok;
      });
      failures = ok ? 0 : failures + 1;
      // Back off while the API is away, by at most four intervals, so its return is seen soon.
      await sleep(this.#o.probeIntervalMs * Math.min(4, 2 ** failures), signal);
      for (const [node, pods] of this.#pods) {
        if (performance.now() - pods.usedAt <= this.#o.podsIdleMs) continue;
        this.#pods.delete(node);
        await pods.informer.stop();
      }
    }
  }

  /** Asks `/readyz` once; answers whether it said ok. */
  async probe(): Promise<boolean> {
    let state: ApiState;
    let message: string;
    try {
      const text = (await this.client.getText("/readyz", AbortSignal.timeout(this.#o.probeIntervalMs))).trim();
      state = text === "ok" ? "Available" : "Unavailable";
      message = text === "ok" ? "/readyz answers ok" : `/readyz answers ${failedChecks(text)}`;
    } catch (err) {
      state = "Unavailable";
      message = `/readyz: ${errorMessage(err)}`;
    }
    if (this.#abort.signal.aborted) return false;
    const now = this.#o.now();
    if (state === "Available") this.#lastGood = now;
    const changed = state !== this.#api.state;
    if (changed && state === "Unavailable") {
      const { lists, errors } = this.#nodes.stats();
      this.#atOutage = { lists, errors };
      this.#nodesAtOutage = this.#nodes.hasSynced() ? this.#nodeViews() : undefined;
    }
    const back = changed && state === "Available" && this.#api.state === "Unavailable";
    const outage = back ? { from: this.#api.since, to: now, nodes: this.#nodesAtOutage } : this.#api.outage;
    this.#api = {
      state,
      message,
      since: changed ? now : this.#api.since,
      checkedAt: now,
      ...(outage ? { outage } : {}),
    };
    if (changed) {
      this.#o.log.info("workload API availability changed", { state, message });
      this.#o.onChange();
    }
    return state === "Available";
  }

  /** The current view; never waits on the network. */
  view(): WorkloadView {
    // Nodes as cached before an outage are not what the API says now once the watch broke during it: unknown until
    // listed again. A watch that never broke kept the cache current.
    const stats = this.#nodes.stats();
    const at = this.#atOutage;
    if (at && (stats.lists > at.lists || (this.#api.state === "Available" && stats.errors === at.errors))) {
      this.#atOutage = undefined;
    }
    const stale = this.#atOutage !== undefined && stats.errors > this.#atOutage.errors;
    const synced = this.#nodes.hasSynced() && (this.#api.state !== "Available" || !stale);
    // While the API is away the Nodes are as last seen before it went: a list taken from a server that is coming
    // back (Nodes registering again one by one) would make nodes seen working look as if they never were.
    const away = this.#api.state === "Unavailable" && this.#nodesAtOutage !== undefined;
    return {
      api: { ...this.#api },
      nodes: away ? new Map(this.#nodesAtOutage) : synced ? this.#nodeViews() : undefined,
      nodesAsOf: synced ? this.#nodesAsOf() : undefined,
    };
  }

  /** Watched: the last good probe (the watch kept the cache current). Polled: the last list, if older. */
  #nodesAsOf(): Date | undefined {
    const polled = this.#nodes.polledAt;
    if (this.#nodes.watching || !polled || !this.#lastGood) return this.#lastGood;
    return polled < this.#lastGood ? polled : this.#lastGood;
  }

  #nodeViews(): Map<string, NodeView> {
    return new Map(this.#nodes.list().map((n) => [n.metadata.name, viewNode(n, DRAIN_STARTED_ANNOTATION)]));
  }

  /** The cached Node object, for writes that need its resourceVersion. */
  node(name: string): KubeNode | undefined {
    this.#o.onNeeded?.();
    return this.#nodes.get(name);
  }

  /**
   * The pods on `node`, or `undefined` while its Pod informer fills. The
   * informer starts on first use and watches that node's Pods only
   * (`spec.nodeName`), so a drain costs what the node holds, not the cluster.
   */
  podsOn(node: string): KubePod[] | undefined {
    this.#o.onNeeded?.();
    let pods = this.#pods.get(node);
    if (!pods) {
      const informer = new Informer<KubePod>(this.client, PODS, {
        ...this.#informerOptions(),
        fieldSelector: `spec.nodeName=${node}`,
      });
      informer.onEvent(() => this.#o.onChange());
      informer.start(this.#abort.signal);
      pods = { informer, usedAt: 0 };
      this.#pods.set(node, pods);
    }
    pods.usedAt = performance.now();
    if (!pods.informer.hasSynced()) return undefined;
    return pods.informer.list(); // the field selector keeps only this node's Pods
  }

  /** The nodes whose Pods are being watched (a drain ran on them lately). */
  get watchingPodsOf(): string[] {
    return [...this.#pods.keys()];
  }

  /** Stops the probe and informers and closes the connections. */
  async close(): Promise<void> {
    this.#abort.abort();
    await Promise.all([
      this.#loop,
      this.#versionLoop,
      this.#versions?.close(),
      this.#nodes.stop(),
      ...[...this.#pods.values()].map((p) => p.informer.stop()),
    ]);
    await this.client.close();
  }
}

/**
 * What a `/readyz` answer other than `ok` says, without quoting it (the answer is the server's to write): the
 * names of the checks it reports failed (`[-]etcd failed`), else that it said something else.
 */
export function failedChecks(text: string): string {
  const failed = [...text.matchAll(/^\[-\]([a-z0-9/_.-]{1,60}) failed/gm)].map((m) => m[1]!).slice(0, 10);
  return failed.length ? `not ok: failed ${failed.join(", ")}` : "something other than ok (not shown)";
}
