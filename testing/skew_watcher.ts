/**
 * An independent watcher of a simulated workload cluster's Kubernetes
 * versions, for the version scenarios and the upgrade benchmark: it reads
 * what the nodes report (the Nodes' kubelets, by watch; each control-plane
 * node's own API server, by polling its `/version` every 50 ms, and again
 * whenever its kubelet moves) and judges the skew policy
 * (core/versions/policy.ts) at every change. It asks NICO nothing.
 *
 * @module
 */
import { type Machine, machineAddress, MACHINES } from "../core/contract/nio.ts";
import type { KubeNode } from "../core/nodes/workload.ts";
import { type NodeVersions, skewViolations } from "../core/versions/policy.ts";
import { formatVersion, parseReportedVersion } from "../core/versions/version.ts";
import { NODES } from "../lib/kube/resources.ts";
import { Informer } from "../lib/runtime/informer.ts";
import { silentLogger } from "../lib/runtime/log.ts";
import { sleep } from "../lib/runtime/sleep.ts";
import type { Scenario } from "./scenario.ts";

/** A version one node was seen to move to: its kubelet (`kubelet`) or its own API server (`apiServer`). */
export interface Move {
  machine: string;
  what: "kubelet" | "apiServer";
  version: string;
  at: number;
}

/** What the watcher saw: every move, and every break of the policy with what each node reported then. */
export interface SkewWatch {
  moves: Move[];
  breaks: string[];
  /** How many times the policy was judged (a watcher that judged nothing proves nothing). */
  readonly judged: number;
  stop(): Promise<void>;
}

/** GET `https://host:6443/version` with the cluster CA; the `gitVersion`, or undefined when it does not answer. */
async function versionAt(host: string, client: Deno.HttpClient): Promise<string | undefined> {
  try {
    const res = await fetch(`https://${host}:6443/version`, { client, signal: AbortSignal.timeout(1_000) });
    const body = await res.json();
    return res.ok && typeof body.gitVersion === "string" ? body.gitVersion : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Watches the workload cluster of scenario `s` (its control-plane Machines named in `controlPlane`) on its own:
 * its Nodes through a watch, each control-plane node's `/version` every 50 ms, the skew policy judged on every
 * change.
 */
export async function skewWatcher(s: Scenario, controlPlane: string[]): Promise<SkewWatch> {
  const machines = (await s.client.list<Machine>(MACHINES, { namespace: s.ns })).items;
  const hostOf = new Map(machines.map((m) => [m.metadata.name, machineAddress(m) ?? ""]));
  const kubelets = new Map<string, string>();
  const apiServers = new Map<string, string>();
  const moves: Move[] = [];
  const breaks: string[] = [];
  let judged = 0;
  const judge = () => {
    judged++;
    const nodes: NodeVersions[] = [...new Set([...kubelets.keys(), ...controlPlane])].map((machine) => ({
      machine,
      plane: controlPlane.includes(machine) ? "controlPlane" : "dataPlane",
      kubelet: parseReportedVersion(kubelets.get(machine)),
      apiServer: parseReportedVersion(apiServers.get(machine)),
    }));
    for (const x of skewViolations(nodes)) {
      const seen = nodes.map((n) =>
        `${n.machine} ${n.kubelet ? formatVersion(n.kubelet) : "-"}/${n.apiServer ? formatVersion(n.apiServer) : "-"}`
      );
      breaks.push(`${x.message} (seen: ${seen.join(", ")})`);
    }
  };
  const move = (machine: string, what: Move["what"], version: string | undefined, into: Map<string, string>) => {
    if (version === undefined || into.get(machine) === version) return;
    into.set(machine, version);
    moves.push({ machine, what, version, at: Date.now() });
    judge();
  };
  const tls = Deno.createHttpClient({ caCerts: [s.workload().ca.certPem] });
  // One observation at a time, in the order they are made: a control-plane node's kubelet that moved is judged
  // with its API server as it answers now (read first), never with an answer from before.
  let serial = Promise.resolve();
  const observe = (f: () => Promise<void>) => (serial = serial.then(f).catch(() => {}));
  const apiServerNow = async (m: string) => move(m, "apiServer", await versionAt(hostOf.get(m)!, tls), apiServers);
  const nodes = new Informer<KubeNode>(s.workload().client, NODES, { logger: silentLogger, resyncMs: 0 });
  nodes.onEvent((_type, n) => {
    const name = n.metadata.name;
    const kubelet = n.status?.nodeInfo?.kubeletVersion;
    observe(async () => {
      if (controlPlane.includes(name) && kubelet !== kubelets.get(name)) await apiServerNow(name);
      move(name, "kubelet", kubelet, kubelets);
    });
  });
  nodes.start();
  await nodes.synced();
  for (const m of controlPlane) await observe(() => apiServerNow(m));
  await serial; // what the nodes report now is known before the watcher is handed over
  const abort = new AbortController();
  const polling = (async () => {
    while (!abort.signal.aborted) {
      for (const m of controlPlane) await observe(() => apiServerNow(m));
      await sleep(50, abort.signal);
    }
  })();
  return {
    moves,
    breaks,
    get judged() {
      return judged;
    },
    async stop() {
      abort.abort();
      await polling;
      await nodes.stop();
      await serial;
      tls.close();
    },
  };
}

/** The kubelet versions the watcher saw each node move to, in order: `cp-2 1.31`. */
export function kubeletMoves(w: SkewWatch, since = 0): string[] {
  return w.moves.filter((m) => m.what === "kubelet" && m.at >= since).map((m) => {
    const v = parseReportedVersion(m.version);
    return `${m.machine} ${v ? `1.${v.minor}` : m.version}`;
  });
}
