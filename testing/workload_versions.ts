/**
 * The Kubernetes versions of the simulated hosts (testing/workload.ts), for
 * both NIO generations: what a node runs after an apply ({@link simVersion})
 * and, per workload cluster, one `apiserver-front` per control-plane node
 * on its address and port 6443 ({@link Fronts}, testing/front.ts) answering
 * `/version` with that node's version and passing everything else to the
 * cluster's one real kube-apiserver (which listens on another port of the
 * bootstrap node's address, behind that node's front).
 *
 * @module
 */
import { askedVersion, clusterNixOf } from "../core/render/clusternix.ts";
import type { Machine, NixosConfiguration } from "../core/contract/nio.ts";
import type { KeyPair } from "../lib/pki.ts";
import { freePort } from "./envtest/process.ts";
import { type Front, type FrontProxyTrust, frontProxyTrust, startFront } from "./front.ts";

/** On a Machine: the version its node runs whatever it is asked for (`1.30.2`: a flake that ignores kubernetesVersion). */
export const KUBERNETES_VERSION_ANNOTATION = "sim.nico.homystack.com/kubernetes-version";

/** What every simulated node runs unless asked or told otherwise. */
export const DEFAULT_SIM_VERSION = "1.31.0";

/** The version a flake commit carries when `cluster.nix` asks for none (default {@link DEFAULT_SIM_VERSION}). */
export type CarriedVersion = (cfg: NixosConfiguration) => string | undefined;

/**
 * The version (`v1.31.0+sim`) a node runs once it applied `cfg`: the Machine's annotation, else what
 * `cluster.nix` asks for (patch `.0` for a minor), else what the flake commit carries, else the default.
 */
export function simVersion(cfg: NixosConfiguration, machine: Machine, carried?: CarriedVersion): string {
  const raw = machine.metadata.annotations?.[KUBERNETES_VERSION_ANNOTATION] ?? askedVersion(clusterNixOf(cfg)) ??
    carried?.(cfg) ?? DEFAULT_SIM_VERSION;
  const bare = raw.replace(/^v/, "");
  return `v${/^\d+\.\d+$/.test(bare) ? `${bare}.0` : bare}+sim`;
}

/** What the fronts of one workload cluster are given. */
export interface FrontsOptions {
  clusterCa: KeyPair;
  trust: FrontProxyTrust;
  /** The cluster's real kube-apiserver, `https://host:port`. */
  upstream: string;
  /** A folder of the cluster's own. */
  dir: string;
}

/** The API server fronts of one workload cluster's control-plane nodes, by machine. */
export class Fronts {
  /**
   * The fronts of a cluster whose real kube-apiserver is to listen on `host` (a free port, {@link apiPort}),
   * with a front-proxy trust and a folder of their own.
   */
  static async make(clusterCa: KeyPair, host: string): Promise<Fronts> {
    const dir = await Deno.makeTempDir({ prefix: "nico-workload-" });
    const trust = await frontProxyTrust(`${dir}/front-proxy`);
    return new Fronts({ clusterCa, trust, upstream: `https://${host}:${freePort()}`, dir });
  }

  readonly #o: FrontsOptions;
  readonly #running = new Map<string, Front>();
  /** Fronts being started, by machine. */
  readonly #starting = new Map<string, Promise<Front>>();
  /** Every control-plane node seen, its address and the version it answers (undefined: its API server is down). */
  readonly #nodes = new Map<string, { host: string; version: string | undefined }>();

  constructor(o: FrontsOptions) {
    this.#o = o;
  }

  /** The port of the real kube-apiserver (on the bootstrap node's address; its 6443 is that node's front). */
  get apiPort(): number {
    return Number(new URL(this.#o.upstream).port);
  }

  /** What kube-apiserver needs to trust the fronts (testing/front.ts frontProxyArgs). */
  get trust(): FrontProxyTrust {
    return this.#o.trust;
  }

  /** The folder of the fronts (removed with the cluster). */
  get dir(): string {
    return this.#o.dir;
  }

  /**
   * Sets what `machine`'s API server answers, starting its front the first time. Two callers at once (an apply
   * hook and an API server's start) share one start: two would write the same folder's certificate and key at
   * once, and a front could read one's certificate with the other's key.
   */
  async set(machine: string, host: string, version: string | undefined): Promise<void> {
    this.#nodes.set(machine, { host, version });
    const starting = this.#starting.get(machine);
    if (starting) await starting.catch(() => {});
    const running = this.#running.get(machine);
    if (running) return await running.setVersion(version);
    const start = this.#start(machine, host, version);
    this.#starting.set(machine, start);
    try {
      this.#running.set(machine, await start);
    } finally {
      this.#starting.delete(machine);
    }
  }

  /** The node's API server restarts (a switch): `/version` answers 503 until {@link set} again. */
  async restarting(machine: string): Promise<void> {
    const n = this.#nodes.get(machine);
    if (!n) return;
    n.version = undefined;
    await this.#running.get(machine)?.setVersion(undefined); // a front that is down (the API is) stays down
  }

  /** The node left: its front stops. */
  async remove(machine: string): Promise<void> {
    this.#nodes.delete(machine);
    await this.#running.get(machine)?.stop();
    this.#running.delete(machine);
  }

  /** Every front stops (the cluster's API is down); {@link set} starts one again. */
  async stopAll(): Promise<void> {
    await Promise.all([...this.#running.values()].map((f) => f.stop()));
    this.#running.clear();
  }

  #start(machine: string, host: string, version: string | undefined): Promise<Front> {
    return startFront({
      host,
      port: 6443,
      clusterCa: this.#o.clusterCa,
      upstream: this.#o.upstream,
      upstreamCa: this.#o.clusterCa,
      trust: this.#o.trust,
      version,
      dir: `${this.#o.dir}/front-${machine}`,
    });
  }
}
