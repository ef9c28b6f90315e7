/**
 * A test's own witness of a simulated cluster's etcd: its own EtcdClient
 * (a client certificate from the cluster's etcd CA), asking every running
 * member's endpoint in turn for the member list and each member for its
 * status, every `intervalMs`, and keeping what it saw. Independent of NICO's
 * observer: it shares no code path with it but lib/etcd/client.ts.
 *
 * @module
 */
import { EtcdClient } from "../lib/etcd/client.ts";
import { issueCert, type KeyPair } from "../lib/pki.ts";
import { quorumOf } from "../core/etcd/members.ts";

/**
 * One look: the members (by name, or id when unstarted), the voters that answered, the leader's name. A look where a
 * member did not answer within the deadline is `inconclusive`: on a loaded machine a slow answer is no proof that the
 * member is down (a stopped member refuses the connection at once; one without a leader answers leader 0). So is a
 * look during which the membership changed (a member removed stops itself, and refuses a status asked after).
 */
export interface EtcdSample {
  /** When the look ended; what it saw was so at some moment from `from` to `at`. */
  at: number;
  /** When the look began. */
  from: number;
  inconclusive?: true;
  /**
   * `running`: it answered its status; `healthy`: and named a leader; `answer`: what it said (its term and leader)
   * or why it did not answer, for a failure's message.
   */
  members: {
    id: string;
    name: string;
    peer: string;
    learner: boolean;
    running: boolean;
    healthy: boolean;
    answer: string;
  }[];
  voters: number;
  /** Voters that answered: what quorum is counted by (an election under way leaves running members leaderless). */
  runningVoters: number;
  healthyVoters: number;
  leader: string | undefined;
}

export interface EtcdWatch {
  readonly samples: readonly EtcdSample[];
  /** The last sample. */
  last(): EtcdSample | undefined;
  /**
   * Conclusive samples where the voters that answered (running members) were fewer than a majority. A look where
   * enough answered but some named no leader caught an election (a leadership transfer, or one etcd began itself
   * on a starved machine): no quorum was lost, and {@link elections} counts those.
   */
  belowQuorum(): EtcdSample[];
  /** Conclusive samples with a majority running but fewer than a majority naming a leader. */
  elections(): EtcdSample[];
  stop(): Promise<void>;
}

/** Watches the etcd at `endpoints()` (client URLs) with a client certificate from `ca`. */
export async function watchEtcd(ca: KeyPair, endpoints: () => string[], intervalMs = 150): Promise<EtcdWatch> {
  const cert = await issueCert(ca, { commonName: "test-watcher", usage: "client", days: 1 });
  const client = new EtcdClient({ caPem: ca.certPem, certPem: cert.certPem, keyPem: cert.keyPem, timeoutMs: 3_000 });
  const samples: EtcdSample[] = [];
  let stopped = false;
  const look = async (): Promise<EtcdSample | undefined> => {
    const from = Date.now();
    for (const ep of endpoints()) {
      const list = await client.members(ep).catch(() => undefined);
      if (!list) continue;
      let unsure = false;
      const why: string[] = [];
      const statuses = await Promise.all(list.map((m, i) => {
        const url = m.clientURLs[0];
        return url
          ? client.status(url).catch((err: unknown) => {
            const text = String((err as Error)?.message);
            if (text.includes("no answer within")) unsure = true;
            why[i] = text.slice(0, 80);
            return undefined;
          })
          : Promise.resolve(undefined);
      }));
      const members = list.map((m, i) => ({
        id: m.id,
        name: m.name,
        peer: m.peerURLs[0] ?? "",
        learner: m.isLearner,
        running: statuses[i] !== undefined,
        healthy: statuses[i] !== undefined && statuses[i]!.leader !== "0",
        answer: statuses[i] ? `term ${statuses[i]!.raftTerm} leader ${statuses[i]!.leader}` : why[i] ?? "unstarted",
      }));
      // A member removed during the look stops itself (etcd does) and refuses its status: the list read first no
      // longer holds. Read it again when one did not answer; a membership that changed meanwhile proves nothing.
      if (statuses.some((x) => x === undefined)) {
        const again = await client.members(ep).catch(() => undefined);
        const ids = (l: typeof list) => l.map((m) => m.id).sort().join(",");
        if (!again || ids(again) !== ids(list)) unsure = true;
      }
      const leaderId = statuses.find((s) => s && s.leader !== "0")?.leader;
      const voters = members.filter((m) => !m.learner);
      return {
        at: Date.now(),
        from,
        ...(unsure ? { inconclusive: true as const } : {}),
        members,
        voters: voters.length,
        runningVoters: voters.filter((m) => m.running).length,
        healthyVoters: voters.filter((m) => m.healthy).length,
        leader: list.find((m) => m.id === leaderId)?.name,
      };
    }
    return undefined;
  };
  // A sampler, one look at a time: each tick starts a look unless the last is still under way.
  let current: Promise<void> | undefined;
  const tick = () => {
    if (stopped || current) return;
    current = look().then((s) => void (s && samples.push(s))).finally(() => (current = undefined));
  };
  const timer = setInterval(tick, intervalMs);
  tick();
  return {
    samples,
    last: () => samples[samples.length - 1],
    belowQuorum: () => samples.filter((s) => !s.inconclusive && s.runningVoters < quorumOf(s.voters)),
    elections: () =>
      samples.filter((s) =>
        !s.inconclusive && s.runningVoters >= quorumOf(s.voters) && s.healthyVoters < quorumOf(s.voters)
      ),
    async stop() {
      if (stopped) return;
      stopped = true;
      clearInterval(timer);
      await current;
      client.close();
    },
  };
}
