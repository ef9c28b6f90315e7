/**
 * lib/etcd/client.ts against a real three-member etcd over TLS (the
 * envtest's etcd 3.7.0 on loopback addresses, client certificates required):
 * members, status, alarms, leadership moves, a member added and never
 * started, its removal, refused credentials and a member that hangs; with
 * two of three stopped, no member lists the members and NICO's observer
 * names the one answering its status without a leader (quorum lost).
 */
import assert from "node:assert/strict";
import { EtcdClient, EtcdError, type EtcdMember } from "../../lib/etcd/client.ts";
import { createCa, issueCert, type KeyPair } from "../../lib/pki.ts";
import { etcdClientUrl, type EtcdMemberProcess, etcdPeerUrl, startEtcdMember } from "../../testing/etcd.ts";
import { eventually } from "../../testing/helpers.ts";
import { EtcdObserver } from "../../controllers/cluster/etcd/observer.ts";
import { silentLogger } from "../../lib/runtime/log.ts";

const HOSTS = ["127.0.91.1", "127.0.91.2", "127.0.91.3"];

/** A running three-member cluster, a client NICO would hold, and the members' client URLs. */
interface Three {
  ca: KeyPair;
  client: EtcdClient;
  endpoints: string[];
  members: EtcdMemberProcess[];
}

/** Members, their names and peer URLs; each status answers as itself with one leader; no alarm. Answers the leader. */
async function readsMembership({ client, endpoints }: Three): Promise<{ list: EtcdMember[]; leader: string }> {
  const list = await eventually("three started members", async () => {
    const got = await client.members(endpoints[0]!);
    return got.length === 3 && got.every((m) => m.name) ? got : undefined;
  }, 30_000);
  assert.deepEqual(list.map((m) => m.name).sort(), ["m1", "m2", "m3"]);
  assert.deepEqual(list.find((m) => m.name === "m2")!.peerURLs, [etcdPeerUrl(HOSTS[1]!)]);
  assert.ok(list.every((m) => /^\d+$/.test(m.id) && !m.isLearner));
  const statuses = await eventually("a leader", async () => {
    const all = await Promise.all(endpoints.map((e) => client.status(e)));
    return all.every((s) => s.leader !== "0" && s.leader === all[0]!.leader) ? all : undefined;
  });
  assert.deepEqual(statuses.map((s) => s.memberId).sort(), list.map((m) => m.id).sort(), "each answers as itself");
  assert.ok(statuses.every((s) => s.version === "3.7.0" && Number(s.raftIndex) > 0 && !s.isLearner));
  assert.deepEqual(await client.alarms(endpoints[0]!), []);
  return { list, leader: statuses[0]!.leader };
}

/** Leadership moves where asked; a member added and never started is a nameless learner until removed. */
async function changesMembership({ client, endpoints }: Three, list: EtcdMember[], leader: string): Promise<void> {
  const statuses = await Promise.all(endpoints.map((e) => client.status(e)));
  const leaderAt = endpoints[statuses.findIndex((s) => s.memberId === leader)]!;
  const target = list.find((m) => m.id !== leader)!;
  await client.moveLeader(leaderAt, target.id);
  await eventually("the new leader", async () => (await client.status(endpoints[0]!)).leader === target.id);
  // etcd refuses a new member until the cluster has been healthy for a few seconds: a join retries.
  const added = await eventually(
    "the member added",
    () => client.call(endpoints[0]!, "cluster/member/add", { peerURLs: [etcdPeerUrl("127.0.91.4")], isLearner: true }),
  );
  const addedId = (added.member as { ID: string }).ID;
  const withLearner = await client.members(endpoints[1]!);
  assert.deepEqual(withLearner.find((m) => m.id === addedId), {
    id: addedId,
    name: "",
    peerURLs: [etcdPeerUrl("127.0.91.4")],
    clientURLs: [],
    isLearner: true,
  });
  const after = await client.removeMember(endpoints[2]!, addedId);
  assert.deepEqual(after.map((m) => m.name).sort(), ["m1", "m2", "m3"]);
}

/** Whether the kernel reports every thread of `pid` stopped (state T in /proc/<pid>/task/<tid>/stat). */
async function allThreadsStopped(pid: number): Promise<boolean> {
  const states: string[] = [];
  for await (const t of Deno.readDir(`/proc/${pid}/task`)) {
    const stat = await Deno.readTextFile(`/proc/${pid}/task/${t.name}/stat`).catch(() => "");
    states.push(stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3));
  }
  return states.length > 0 && states.every((x) => x === "T" || x === "t");
}

/** Credentials the members do not trust are refused, naming the endpoint; a hung member costs the deadline. */
async function refusesAndTimesOut({ ca, client, endpoints, members }: Three): Promise<void> {
  const other = await createCa({ commonName: "not-etcd" });
  const stranger = await issueCert(other, { commonName: "x", usage: "client", days: 1 });
  const wrong = new EtcdClient({ caPem: ca.certPem, certPem: stranger.certPem, keyPem: stranger.keyPem });
  try {
    const named = (e: Error) => e instanceof EtcdError && e.message.includes(endpoints[0]!);
    await assert.rejects(wrong.members(endpoints[0]!), named);
  } finally {
    wrong.close();
  }
  await members[2]!.process.kill("SIGSTOP");
  // kill(2) returns before every thread of the program has stopped (a group stop reaches each thread in turn, and on a
  // loaded machine one may still answer a request): wait until the kernel reports them all stopped.
  const pid = await members[2]!.process.programPid();
  await eventually("every thread of m3 stopped", () => allThreadsStopped(pid), 10_000, 20);
  const started = performance.now();
  await assert.rejects(client.status(endpoints[2]!), /no answer within 1000 ms/);
  const took = performance.now() - started;
  assert.ok(took < 10_000, `a hung member held the request ${took} ms`);
  await members[2]!.process.kill("SIGCONT");
}

/** Two of three stopped: the list needs a leader and hangs; the observer sees the member left answer without one. */
async function losesQuorum({ ca, endpoints, members }: Three): Promise<void> {
  const cert = await issueCert(ca, { commonName: "nico", usage: "client", days: 1 });
  const opts = { intervalMs: 3_600_000, timeoutMs: 1_000, policy: "loopback" as const, onChange: () => {} };
  const obs = new EtcdObserver(ca, cert, { ...opts, key: "test/c", log: silentLogger });
  try {
    obs.watch(HOSTS.map((h, i) => ({ host: h, url: endpoints[i]! })));
    await members[1]!.stop();
    await members[2]!.stop();
    const snap = await eventually(
      "the observer sees a leaderless member",
      async () => {
        const s = await obs.look();
        return s.leaderless?.length ? s : undefined;
      },
      30_000,
      200,
    );
    assert.equal(snap.members, undefined);
    assert.deepEqual(snap.leaderless, [HOSTS[0]]);
  } finally {
    await obs.close();
  }
}

Deno.test("the etcd client reads and changes a real cluster's membership", async () => {
  const dir = await Deno.makeTempDir({ prefix: "nico-etcd-" });
  const ca = await createCa({ commonName: "etcd-ca" });
  const nico = await issueCert(ca, { commonName: "nico", usage: "client", days: 1 });
  const initialCluster = HOSTS.map((h, i) => `m${i + 1}=${etcdPeerUrl(h)}`).join(",");
  const three: Three = {
    ca,
    client: new EtcdClient({ caPem: ca.certPem, certPem: nico.certPem, keyPem: nico.keyPem, timeoutMs: 1_000 }),
    endpoints: HOSTS.map((h) => etcdClientUrl(h)),
    members: [],
  };
  try {
    for (const [i, host] of HOSTS.entries()) {
      const name = `m${i + 1}`;
      three.members.push(await startEtcdMember({ name, host, ca, initialCluster, state: "new", dir: `${dir}/m${i}` }));
    }
    const { list, leader } = await readsMembership(three);
    await changesMembership(three, list, leader);
    await refusesAndTimesOut(three);
    await losesQuorum(three);
  } finally {
    three.client.close();
    for (const m of three.members) await m.stop();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});
