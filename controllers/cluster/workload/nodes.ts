/**
 * A workload cluster's Nodes, as NICO keeps them: watched (an informer: list, then a watch held open) while the
 * cluster is among those NICO needed most recently (core/nodes/watches.ts), else listed once per probe round. Either
 * way the same cache, counters that only grow across the switches (a connection tells an outage's staleness by
 * them), and a handler told of every change.
 *
 * @module
 */
import type { KubeClient } from "../../../lib/kube/client.ts";
import { NODES } from "../../../lib/kube/resources.ts";
import { Informer, type InformerOptions } from "../../../lib/runtime/informer.ts";
import { errorMessage, type Logger } from "../../../lib/runtime/log.ts";
import type { KubeNode } from "../../../core/nodes/workload.ts";

export interface NodeSourceOptions {
  informer: InformerOptions;
  log: Logger;
  /** A Node was added, changed or removed (by the watch, or between two lists); `first`: by the first list. */
  onChange: (first: boolean) => void;
}

/** The Nodes of one workload cluster, watched or polled. */
export class NodeSource {
  readonly #client: KubeClient;
  readonly #o: NodeSourceOptions;
  #informer: Informer<KubeNode> | undefined;
  /** The last list (polled, or the informer's cache when it stopped). */
  #listed = new Map<string, KubeNode>();
  #listedOk = false;
  /** Lists and errors of stopped informers and of polls. */
  #base = { lists: 0, errors: 0 };
  /** When the last poll succeeded (performance clock is not used: a Date, as the connection's `now`). */
  polledAt: Date | undefined;

  constructor(client: KubeClient, o: NodeSourceOptions) {
    this.#client = client;
    this.#o = o;
  }

  /** Whether a watch is held (else the Nodes are polled). */
  get watching(): boolean {
    return this.#informer !== undefined;
  }

  /** Starts watching (no-op when watching). */
  watch(signal: AbortSignal): void {
    if (this.#informer || signal.aborted) return;
    const informer = new Informer<KubeNode>(this.#client, NODES, this.#o.informer);
    informer.onEvent(() => this.#o.onChange(!informer.hasSynced() && !this.#listedOk));
    informer.start(signal);
    this.#informer = informer;
  }

  /** Stops watching, keeping what the watch saw as the last list. */
  async unwatch(): Promise<void> {
    const informer = this.#informer;
    if (!informer) return;
    this.#informer = undefined;
    await informer.stop();
    const s = informer.stats();
    this.#base = { lists: this.#base.lists + s.lists, errors: this.#base.errors + s.errors };
    if (informer.hasSynced()) {
      this.#listed = new Map(informer.list().map((n) => [n.metadata.name, n]));
      this.#listedOk = true;
    }
  }

  /** Lists the Nodes once (when not watching); a difference from the last list tells the handler. */
  async poll(now: Date, signal: AbortSignal): Promise<void> {
    if (this.#informer) return;
    try {
      const { items } = await this.#client.list<KubeNode>(NODES, { signal });
      if (this.#informer || signal.aborted) return;
      const next = new Map(items.map((n) => [n.metadata.name, n]));
      const first = !this.#listedOk;
      const changed = !this.#listedOk || next.size !== this.#listed.size ||
        [...next].some(([name, n]) => this.#listed.get(name)?.metadata.resourceVersion !== n.metadata.resourceVersion);
      this.#listed = next;
      this.#listedOk = true;
      this.#base.lists++;
      this.polledAt = now;
      if (changed) this.#o.onChange(first);
    } catch (err) {
      this.#base.errors++;
      this.#o.log.debug("listing Nodes failed", { error: errorMessage(err) });
    }
  }

  /** The Nodes were not confirmed this round (the API did not answer): counted as an error, as a broken watch is. */
  missed(): void {
    if (!this.#informer) this.#base.errors++;
  }

  hasSynced(): boolean {
    return this.#informer?.hasSynced() || this.#listedOk;
  }

  stats(): { lists: number; errors: number } {
    const s = this.#informer?.stats() ?? { lists: 0, errors: 0 };
    return { lists: this.#base.lists + s.lists, errors: this.#base.errors + s.errors };
  }

  list(): KubeNode[] {
    return this.#informer?.hasSynced() ? this.#informer.list() : [...this.#listed.values()];
  }

  get(name: string): KubeNode | undefined {
    return this.#informer?.hasSynced() ? this.#informer.get(undefined, name) : this.#listed.get(name);
  }

  /** Stops the watch, if any. */
  async stop(): Promise<void> {
    await this.#informer?.stop();
  }
}
