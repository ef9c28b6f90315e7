/**
 * Stacked etcd on the simulated control-plane hosts: each control-plane
 * node runs a real etcd member (testing/etcd.ts) on its Machine's loopback
 * address, ports 2379/2380 (the client port `cluster.nix` names), with the
 * etcd CA its configuration carries (`etcd-ca.crt`, `etcd-ca.key`), as a
 * k3s node following the flake contract does. What the hosts do:
 *
 * - the bootstrap node's apply starts a new cluster of one;
 * - another control-plane node's apply adds its member as a learner through
 *   a running member (retrying while etcd refuses, as k3s does), starts it
 *   and promotes it once it caught up; with the Machine annotation
 *   {@link ETCD_JOIN_ANNOTATION} `voter`, it is added as a voter at once and
 *   started (as kubeadm joins); with `fail`, the member is added and never
 *   started (a failed join);
 * - a switch to a new spec stops the member (the node restarts k3s) and its apply starts it again, with its data;
 *   a run of the spec it already runs (NIO v1's scheduled tick) restarts nothing, as on NixOS;
 * - `#minimal` (the configuration's removal) stops it and leaves the member in the list, as kubeadm does;
 * - a `cluster.nix` restore part restores the backup or rejoins (./sim-etcd-restore.ts).
 *
 * A configuration that carries no etcd CA runs no etcd (a cluster without
 * the contract); the mode `none` runs none for any cluster, `foreign-ca` runs
 * members with a CA of their own that NICO's client certificate is not
 * signed by. The simulated cluster's kube-apiserver keeps its own private
 * etcd unless asked to store in these (./workload_etcd.ts, `stackedEtcd`).
 *
 * @module
 */
import { EtcdClient } from "../lib/etcd/client.ts";
import type { KubeClient } from "../lib/kube/client.ts";
import { createCa, issueCert, type KeyPair } from "../lib/pki.ts";
import { BOOTSTRAP_LABEL, ROLE_LABEL } from "../core/contract/labels.ts";
import { type Machine, machineAddress, type NixosConfiguration } from "../core/contract/nio.ts";
import { etcdClientUrl, type EtcdMemberProcess, etcdPeerUrl, startEtcdMember } from "./etcd.ts";
import { eventually } from "./helpers.ts";
import { download, restoreInto, type RestorePart, restorePartOf, urlOf, writtenUrls } from "./sim-etcd-restore.ts";
import { caOf, clientPortOf, keyOf, specHashOf } from "./sim-etcd-config.ts";

/** On a Machine, `fail`: its join adds its etcd member and never starts it; `voter`: it joins as a voter at once. */
export const ETCD_JOIN_ANNOTATION = "sim.nico.homystack.com/etcd-join";

/** Whether the hosts run etcd NICO can reach: `contract` (default), `none`, or `foreign-ca` (a CA of their own). */
export type SimEtcdMode = "contract" | "none" | "foreign-ca";

/** What a switch saw just before it stopped a member: whether that member led. */
export interface MemberStop {
  cluster: string;
  machine: string;
  leader: boolean;
  at: number;
}

interface Host {
  name: string;
  host: string;
  dir: string;
  port: number;
  proc?: EtcdMemberProcess | undefined;
  /** What the host does, one thing at a time (a switch's stop, then its start). */
  busy: Promise<unknown>;
  /** Killed (a dead host): nothing it is sent starts its member again until it is revived (or takes a restore part). */
  dead?: boolean;
  /** The restore requests whose part it took (./sim-etcd-restore.ts): each once. */
  parts: Set<string>;
  /**
   * NICO's hash of the spec it last applied: a run of that same spec (NIO v1's scheduled tick) switches to the same
   * system, and NixOS restarts no unit for it, so its member keeps running.
   */
  ran?: string | undefined;
}

interface Cluster {
  ca: KeyPair;
  /** A client the hosts use (joins, promotions, the switch's leader check). */
  client: EtcdClient;
  hosts: Map<string, Host>;
  /** The last restore: the hosts of the cluster it made (the restored one, then each that rejoined). */
  restored?: { requestId: string; hosts: Set<string> } | undefined;
}

/** The simulated members of every cluster, fed by the workload clusters' hooks. */
export interface SimEtcd {
  applied(cfg: NixosConfiguration, machine: Machine): Promise<void>;
  applyStarted(cfg: NixosConfiguration, machine: Machine): Promise<void>;
  removed(cfg: NixosConfiguration, machine: Machine): Promise<void>;
  /** Stops a member, as a dead host would (`revive` starts it again); `wipe`: its data is lost too. */
  kill(namespace: string, cluster: string, machine: string, wipe?: boolean): Promise<void>;
  revive(namespace: string, cluster: string, machine: string): Promise<void>;
  /** The etcd CA a cluster's members use (for a test's own watcher). */
  ca(namespace: string, cluster: string): KeyPair | undefined;
  /** Every member a switch stopped, and whether it led then. */
  readonly stops: readonly MemberStop[];
  stop(): Promise<void>;
}

/** Simulated stacked etcd for the workload clusters (see the module's doc). */
export function simEtcd(management: KubeClient, mode: SimEtcdMode = "contract"): SimEtcd {
  const clusters = new Map<string, Cluster>();
  const stops: MemberStop[] = [];
  const root = Deno.makeTempDirSync({ prefix: "nico-sim-etcd-" });

  const making = new Map<string, Promise<Cluster | undefined>>();
  const clusterFor = (cfg: NixosConfiguration): Promise<Cluster | undefined> => {
    if (mode === "none" || cfg.metadata.labels?.[ROLE_LABEL] !== "control-plane") return Promise.resolve(undefined);
    const known = clusters.get(keyOf(cfg));
    if (known) return Promise.resolve(known);
    const p = making.get(keyOf(cfg)) ?? makeCluster(cfg).finally(() => making.delete(keyOf(cfg)));
    making.set(keyOf(cfg), p);
    return p;
  };
  const makeCluster = async (cfg: NixosConfiguration): Promise<Cluster | undefined> => {
    const given = await caOf(management, cfg);
    if (!given) return undefined;
    const ca = mode === "foreign-ca" ? await createCa({ commonName: "not-nicos-etcd-ca" }) : given;
    const cert = await issueCert(ca, { commonName: "sim-host", usage: "client", days: 30 });
    const client = new EtcdClient({ caPem: ca.certPem, certPem: cert.certPem, keyPem: cert.keyPem, timeoutMs: 2_000 });
    const c: Cluster = { ca, client, hosts: new Map() };
    clusters.set(keyOf(cfg), c);
    return c;
  };
  const hostOf = (c: Cluster, cfg: NixosConfiguration, machine: Machine): Host => {
    const name = machine.metadata.name;
    const h = c.hosts.get(name) ??
      {
        name,
        host: machineAddress(machine) ?? name,
        dir: `${root}/${keyOf(cfg).replace("/", "_")}/${name}`,
        port: 0,
        busy: Promise.resolve(),
        parts: new Set(),
      };
    h.port = clientPortOf(cfg);
    c.hosts.set(name, h);
    return h;
  };
  const urls = writtenUrls(management);
  const running = (c: Cluster, but?: string) =>
    [...c.hosts.values()].filter((h) => h.proc && h.name !== but).map((h) => etcdClientUrl(h.host, h.port));

  return {
    stops,
    async applied(cfg, machine) {
      const c = await clusterFor(cfg);
      if (!c) return;
      const h = hostOf(c, cfg, machine);
      await serial(h, () => apply(c, h, cfg, machine));
      h.ran = specHashOf(cfg);
    },
    applyStarted: (cfg, machine) => urls.write(cfg, machine).then(() => switchStops(clusters, stops, cfg, machine)),
    removed: (cfg, machine) => stopHost(clusters.get(keyOf(cfg))?.hosts.get(machine.metadata.name), true),
    kill: (ns, cluster, machine, wipe) => killHost(clusters.get(`${ns}/${cluster}`)?.hosts.get(machine), wipe),
    revive: (ns, cluster, machine) => reviveHost(clusters.get(`${ns}/${cluster}`), machine),
    ca: (ns, cluster) => clusters.get(`${ns}/${cluster}`)?.ca,
    stop: () => stopAll(clusters, root),
  };

  /** A host's apply: its member restarted with its data, a new cluster on the bootstrap node, or a join. */
  async function apply(c: Cluster, h: Host, cfg: NixosConfiguration, machine: Machine): Promise<void> {
    const part = restorePartOf(cfg);
    if (part && !h.parts.has(part.requestId)) {
      return await takePart({ management, root, url: urls.of(cfg, machine) }, c, h, cfg, machine, part);
    }
    if (h.proc || h.dead) return;
    const peer = etcdPeerUrl(h.host);
    const exists = await Deno.stat(`${h.dir}/data`).then(() => true, () => false);
    const bootstrap = cfg.metadata.labels?.[BOOTSTRAP_LABEL] === "true" && running(c).length === 0;
    if (exists) return void (h.proc = await start(c, h, `${h.name}=${peer}`, "existing"));
    if (bootstrap) return void (h.proc = await start(c, h, `${h.name}=${peer}`, "new"));
    await join(c, h, machine, () => running(c, h.name));
  }
}

/** A dead host brought back: its member started again with the data it has. */
async function reviveHost(c: Cluster | undefined, machine: string): Promise<void> {
  const h = c?.hosts.get(machine);
  if (!c || !h) return;
  h.dead = false;
  await serial(h, async () => {
    if (!h.proc) h.proc = await start(c, h, `${h.name}=${etcdPeerUrl(h.host)}`, "existing");
  });
}

/** A dead host: its member stops, and no later apply (a scheduled day-two run) brings it back until revived. */
function killHost(h: Host | undefined, wipe = false): Promise<void> {
  if (h) h.dead = true;
  return stopHost(h, wipe);
}

/** A switch stops the host's member (recording whether it led then). */
async function switchStops(
  clusters: Map<string, Cluster>,
  stops: MemberStop[],
  cfg: NixosConfiguration,
  machine: Machine,
): Promise<void> {
  const c = clusters.get(keyOf(cfg));
  const h = c?.hosts.get(machine.metadata.name);
  if (!c || !h) return;
  const hash = specHashOf(cfg);
  if (hash !== undefined && hash === h.ran) return; // the same system again: nothing restarts
  await serial(h, async () => {
    if (!h.proc) return;
    const own = await c.client.status(etcdClientUrl(h.host, h.port)).catch(() => undefined);
    const leader = own !== undefined && own.leader === own.memberId;
    stops.push({ cluster: keyOf(cfg), machine: h.name, leader, at: Date.now() });
    await h.proc.stop();
    h.proc = undefined;
  });
}

/** Stops the host's member (a removal also wipes its data; the member stays in the list either way). */
async function stopHost(h: Host | undefined, wipe: boolean): Promise<void> {
  if (!h) return;
  await serial(h, async () => {
    await h.proc?.stop();
    h.proc = undefined;
    if (wipe) await Deno.remove(h.dir, { recursive: true }).catch(() => {});
  });
}

/** Stops every member of every cluster, once each host is done with what it does. */
async function stopAll(clusters: Map<string, Cluster>, root: string): Promise<void> {
  for (const c of clusters.values()) {
    for (const h of c.hosts.values()) {
      await h.busy.catch(() => {});
      await h.proc?.stop();
    }
    c.client.close();
  }
  clusters.clear();
  await Deno.remove(root, { recursive: true }).catch(() => {});
}

/** Runs `fn` after whatever the host is doing. */
function serial(h: Host, fn: () => Promise<void>): Promise<void> {
  const next = h.busy.catch(() => {}).then(fn);
  h.busy = next;
  return next;
}

/** Starts the host's member. */
function start(c: Cluster, h: Host, initialCluster: string, state: "new" | "existing"): Promise<EtcdMemberProcess> {
  return startEtcdMember({
    name: h.name,
    host: h.host,
    clientPort: h.port,
    ca: c.ca,
    initialCluster,
    state,
    dir: h.dir,
  });
}

/**
 * A join, as k3s does it: the member is added as a learner through a running member (retrying while etcd refuses),
 * started, and promoted once it caught up; as kubeadm does it (annotated `voter`): added as a voter and started. A
 * Machine annotated to fail adds it and never starts it.
 */
async function join(c: Cluster, h: Host, machine: Machine, others: () => string[]): Promise<void> {
  await Deno.remove(h.dir, { recursive: true }).catch(() => {});
  const peer = etcdPeerUrl(h.host);
  const isLearner = machine.metadata.annotations?.[ETCD_JOIN_ANNOTATION] !== "voter";
  const added = await eventually(
    `${h.name} added to etcd`,
    async () => {
      const via = others()[0];
      if (!via) return undefined;
      const list = await c.client.members(via);
      const mine = list.find((m) => m.peerURLs.includes(peer));
      if (mine) return { id: mine.id, via, list };
      const r = await c.client.call(via, "cluster/member/add", { peerURLs: [peer], isLearner });
      // The answer's own list: a voter added to one member leaves it without a leader (no list) until it starts.
      type Added = { ID: string; name?: string; peerURLs?: string[] };
      const after = ((r.members ?? []) as Added[]).map((m) => ({
        id: String(m.ID),
        name: m.name ?? "",
        peerURLs: m.peerURLs ?? [],
      }));
      return { id: String((r.member as Added).ID), via, list: after };
    },
    120_000,
    500,
  );
  if (machine.metadata.annotations?.[ETCD_JOIN_ANNOTATION] === "fail") return;
  const initial = added.list.filter((m) => m.name || m.id === added.id)
    .map((m) => `${m.id === added.id ? h.name : m.name}=${m.peerURLs[0]}`).join(",");
  h.proc = await start(c, h, initial, "existing");
  const url = etcdClientUrl(h.host, h.port);
  await eventually(`${h.name} answers`, () => c.client.status(url).then((s) => s.raftIndex !== "0"), 60_000, 200);
  if (!isLearner) return;
  await eventually(
    `${h.name} promoted`,
    async () => {
      const via = others()[0] ?? url;
      const list = await c.client.members(via);
      if (!list.find((m) => m.id === added.id)?.isLearner) return true;
      await c.client.call(via, "cluster/member/promote", { ID: added.id });
      return true;
    },
    60_000,
    300,
  );
}

/** The host's part in a restore (./sim-etcd-restore.ts): restore the backup, or remove its data and rejoin. */
async function takePart(
  at: { management: KubeClient; root: string; url?: string | undefined },
  c: Cluster,
  h: Host,
  cfg: NixosConfiguration,
  machine: Machine,
  part: RestorePart,
): Promise<void> {
  if (part.role === "restore") {
    const file = `${at.root}/${keyOf(cfg).replace("/", "_")}-${part.requestId}.db`;
    await download(at.url ?? await urlOf(at.management, cfg), part, file);
    // Already inside the host's serial work (apply): stop and wipe here, not through stopHost's queue.
    await h.proc?.stop();
    h.proc = undefined;
    await Deno.remove(h.dir, { recursive: true }).catch(() => {});
    await restoreInto(file, `${h.dir}/data`, h.name, etcdPeerUrl(h.host), part.initialCluster);
    await Deno.remove(file);
    h.proc = await start(c, h, part.initialCluster, "new");
    c.restored = { requestId: part.requestId, hosts: new Set([h.name]) };
  } else {
    const r = c.restored?.requestId === part.requestId ? c.restored : undefined;
    if (!r) throw new Error(`no host restored ${part.requestId}: nothing to rejoin`);
    await h.proc?.stop();
    h.proc = undefined;
    const members = () =>
      [...r.hosts].map((n) => c.hosts.get(n)).filter((x) => x?.proc).map((x) => etcdClientUrl(x!.host, x!.port));
    await join(c, h, machine, members);
    r.hosts.add(h.name);
  }
  h.dead = false;
  h.parts.add(part.requestId);
}
