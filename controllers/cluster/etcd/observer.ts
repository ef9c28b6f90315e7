/**
 * One cluster's etcd, watched off the pass's critical path: a loop that
 * refreshes a {@link EtcdSnapshot} every `intervalMs` (backing off while no
 * member answers, and looking again within {@link ETCD_SOON_MS} while etcd is
 * mid-change) and when asked ({@link EtcdObserver.refresh}): the member
 * list from the first control-plane node that answers (in node order), every
 * member's status in parallel (each with the client's deadline), and the
 * alarms. A pass reads the last snapshot and never waits on a hung member.
 * Kept in the cluster's memory (controllers/cluster/memory.ts) and closed
 * with it.
 *
 * A member is asked only on its node's endpoint (the node's address and the
 * cluster's client port) when its peer URL is on a node of the cluster;
 * never on a client URL it advertises (that is the member's to say, so a
 * tenant's), and no endpoint the target policy refuses
 * (controllers/cluster/workload/targets.ts).
 *
 * @module
 */
import { EtcdClient } from "../../../lib/etcd/client.ts";
import type { KeyPair } from "../../../lib/pki.ts";
import { errorMessage, type Logger } from "../../../lib/runtime/log.ts";
import { sleep } from "../../../lib/runtime/sleep.ts";
import { urlHost } from "../../../core/etcd/members.ts";
import { type EtcdSnapshot, memberViews } from "../../../core/etcd/observed.ts";
import type { EtcdStatus } from "../../../lib/etcd/client.ts";
import { nameCheck, refusedTarget, type TargetPolicy } from "../workload/targets.ts";
import type { Rounds } from "../workload/rounds.ts";

/** How NICO watches etcd, for every cluster (given to the reconciler). */
export interface EtcdWatching {
  /** Between refreshes (default 10 s); up to four times that while no member answers. */
  intervalMs: number;
  /** Each request's deadline (default 2 s). */
  timeoutMs: number;
  /** Which addresses may be reached (the workload connections' policy). */
  policy: TargetPolicy;
  /** What NICO sees of a cluster's etcd changed: requeue the cluster with this key. */
  onChange: (clusterKey: string) => void;
  /**
   * Whether the cluster is idle (its workload connection polls: core/nodes/watches.ts): then the client's sockets
   * and TLS state are closed after each look, and opened again for the next. Absent: never idle.
   */
  idle?: ((clusterKey: string) => boolean) | undefined;
  /** An idle cluster's look takes its turn here (the workload connections' polled rounds). */
  rounds?: Rounds | undefined;
}

/** The defaults of {@link EtcdWatching}. */
export const ETCD_INTERVAL_MS = 10_000;
export const ETCD_TIMEOUT_MS = 2_000;
/**
 * How soon the observer looks again while etcd is changing under it: a member added and not started or still a
 * learner, or members that answer without a leader (quorum lost, or a join under way). Such a state lasts seconds,
 * and the status must not keep saying it (nor hide it) until the next slow look.
 */
export const ETCD_SOON_MS = 2_000;

/**
 * Whether a look saw etcd mid-change: a member added but not started or still a learner, or members that answer
 * without a leader.
 *
 * @example
 * ```ts
 * import { changing } from "./observer.ts";
 * changing({ members: [{ id: "1", name: "", peerURLs: [], clientURLs: [], isLearner: false }] }); // true
 * changing({ members: undefined, leaderless: ["127.0.0.2"] }); // true
 * changing({ members: [{ id: "1", name: "cp-1", peerURLs: [], clientURLs: [], isLearner: false }] }); // false
 * ```
 */
export function changing(s: Pick<EtcdSnapshot, "members" | "leaderless">): boolean {
  return (s.leaderless?.length ?? 0) > 0 || (s.members ?? []).some((m) => !m.name || m.isLearner);
}

/** A control-plane node's etcd client endpoint, by the host its members' peer URLs name. */
export interface EtcdEndpoint {
  host: string;
  url: string;
}

/** What changes of a snapshot a pass cares about: members, their health and leader, reachability. */
function fingerprint(s: EtcdSnapshot): string {
  const views = memberViews(s).map((m) => [m.id, m.name, m.isLearner, m.healthy, m.leader, m.alarms]);
  return JSON.stringify([s.members === undefined, views]);
}

/** A cluster's etcd observer; {@link close} stops it. */
export class EtcdObserver {
  readonly client: EtcdClient;
  /** The etcd CA certificate the client trusts: a new CA needs a new observer. */
  readonly caPem: string;
  readonly #o: EtcdWatching & { key: string; log: Logger };
  readonly #abort = new AbortController();
  #endpoints: EtcdEndpoint[] = [];
  #snapshot: EtcdSnapshot | undefined;
  #byMember = new Map<string, string>();
  #wake: AbortController | undefined;
  /** A look is under way. */
  #looking = false;
  /** A refresh was asked for while a look was under way: look again at once after it. */
  #again = false;
  #loop: Promise<void> | undefined;

  constructor(ca: KeyPair, client: KeyPair, o: EtcdWatching & { key: string; log: Logger }) {
    this.caPem = ca.certPem;
    this.#o = o;
    this.client = new EtcdClient({
      caPem: ca.certPem,
      certPem: client.certPem,
      keyPem: client.keyPem,
      timeoutMs: o.timeoutMs,
      beforeRequest: nameCheck(o.policy),
    });
  }

  /** The endpoints to ask, in node order; a change is looked at at once. Starts the loop on first use. */
  watch(endpoints: EtcdEndpoint[]): void {
    const changed = JSON.stringify(endpoints) !== JSON.stringify(this.#endpoints);
    this.#endpoints = endpoints;
    if (!this.#loop) this.#loop = this.#run();
    else if (changed) this.refresh();
  }

  /** Looks again now (after a membership change), without waiting for it. */
  refresh(): void {
    if (this.#looking) this.#again = true;
    else this.#wake?.abort();
  }

  /** The last snapshot (undefined before the first refresh ended). */
  snapshot(): EtcdSnapshot | undefined {
    return this.#snapshot;
  }

  /** The endpoint a member was last asked on. */
  endpointOf(memberId: string): string | undefined {
    return this.#byMember.get(memberId);
  }

  async #run(): Promise<void> {
    let failures = 0;
    while (!this.#abort.signal.aborted) {
      const before = this.#snapshot;
      this.#again = false;
      this.#looking = true;
      const idle = this.#o.idle?.(this.#o.key) ?? false;
      const look = () => this.look().finally(() => idle && this.client.close());
      const next = await (idle && this.#o.rounds ? this.#o.rounds.run(look) : look())
        .finally(() => (this.#looking = false));
      if (this.#abort.signal.aborted) return;
      this.#snapshot = next;
      failures = next.members ? 0 : failures + 1;
      if (!before || fingerprint(before) !== fingerprint(next)) this.#o.onChange(this.#o.key);
      this.#wake = new AbortController();
      if (this.#again) this.#wake.abort(); // asked for during the look: what it saw may predate the ask
      // Backing off while nothing answers; soon while etcd is mid-change (a join, a lost leader).
      const wait = changing(next)
        ? Math.min(this.#o.intervalMs, ETCD_SOON_MS)
        : this.#o.intervalMs * Math.min(4, 2 ** failures);
      await sleep(wait, AbortSignal.any([this.#abort.signal, this.#wake.signal]));
    }
  }

  /** One refresh: the list, every member's status, the alarms. Answers it (the loop keeps it). */
  async look(): Promise<EtcdSnapshot> {
    const since = new Date();
    const started = performance.now();
    const signal = this.#abort.signal;
    let requests = 0;
    const listErrors: string[] = [];
    let members: EtcdSnapshot["members"];
    let listedBy: string | undefined;
    for (const ep of this.#endpoints) {
      const refused = refusedTarget(ep.url, this.#o.policy);
      if (refused) {
        listErrors.push(`etcd ${ep.url}: ${refused}`);
        continue;
      }
      requests++;
      try {
        members = await this.client.members(ep.url, signal);
        listedBy = ep.url;
        break;
      } catch (err) {
        listErrors.push(errorMessage(err));
      }
    }
    const statuses = new Map<string, EtcdStatus>();
    const statusErrors = new Map<string, string>();
    const byMember = new Map<string, string>();
    let alarms: EtcdSnapshot["alarms"] = [];
    if (members && listedBy) {
      for (const m of members) {
        const at = this.#endpointFor(m.peerURLs);
        if (at) byMember.set(m.id, at);
        else statusErrors.set(m.id, "not asked: its peer URL names no node of the cluster NICO may reach");
      }
      const asked = [...byMember].map(async ([id, url]) => {
        requests++;
        try {
          statuses.set(id, await this.client.status(url, signal));
        } catch (err) {
          statusErrors.set(id, errorMessage(err));
        }
      });
      requests++;
      const alarmsAsked = this.client.alarms(listedBy, signal).then((a) => (alarms = a), (err) => {
        this.#o.log.debug("etcd alarms not read", { error: errorMessage(err) });
      });
      await Promise.all([...asked, alarmsAsked]);
    }
    const leaderless = members ? undefined : await this.#leaderless(signal, () => requests++);
    this.#byMember = byMember;
    const ms = Math.round((performance.now() - started) * 10) / 10;
    return {
      at: new Date(),
      since,
      members,
      listErrors,
      statuses,
      statusErrors,
      alarms,
      ...(leaderless?.length ? { leaderless } : {}),
      cost: { requests, ms },
    };
  }

  /**
   * With no list from any endpoint: the hosts whose member answers its own status without a leader (etcd runs
   * there but has lost quorum; a member list needs a leader), asked in parallel.
   */
  async #leaderless(signal: AbortSignal, count: () => void): Promise<string[]> {
    const allowed = this.#endpoints.filter((ep) => refusedTarget(ep.url, this.#o.policy) === undefined);
    const asked = await Promise.all(allowed.map(async (ep) => {
      count();
      const s = await this.client.status(ep.url, signal).catch(() => undefined);
      return s && s.leader === "0" ? ep.host : undefined;
    }));
    return asked.filter((h): h is string => h !== undefined);
  }

  /** The node's endpoint on the peer URL's host, if the policy lets NICO reach it (never an advertised URL). */
  #endpointFor(peerURLs: string[]): string | undefined {
    for (const u of peerURLs) {
      const host = urlHost(u);
      const ep = this.#endpoints.find((e) => e.host === host);
      if (ep && refusedTarget(ep.url, this.#o.policy) === undefined) return ep.url;
    }
    return undefined;
  }

  /** Stops the loop and closes the connections. */
  async close(): Promise<void> {
    this.#abort.abort();
    await this.#loop;
    this.client.close();
  }
}
