/**
 * What watching etcd costs, on real members (the envtest's etcd 3.7.0 on
 * loopback, TLS with client certificates): for clusters of 3 and 5 members,
 * one refresh of NICO's observer (member list, every member's status,
 * alarms: requests and milliseconds, median and worst of 30), the time of
 * one member list and one status request through lib/etcd/client.ts (the
 * gateway over `fetch`), and the process's memory before and after. Prints
 * figures; not a test.
 *
 *   deno task bench:etcd
 *
 * @module
 */
import { EtcdObserver } from "../controllers/cluster/etcd/observer.ts";
import { createCa, issueCert } from "../lib/pki.ts";
import { silentLogger } from "../lib/runtime/log.ts";
import { etcdClientUrl, type EtcdMemberProcess, etcdPeerUrl, startEtcdMember } from "../testing/etcd.ts";
import { eventually } from "../testing/helpers.ts";

const ROUNDS = 30;
const stats = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return { median: s[Math.floor(s.length / 2)]!, worst: s[s.length - 1]! };
};
const mib = () => Math.round(Deno.memoryUsage().rss / 1024 / 1024);

async function measure(n: number, block: number): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "nico-bench-etcd-" });
  const ca = await createCa({ commonName: "bench-etcd-ca" });
  const hosts = Array.from({ length: n }, (_, i) => `127.0.${block}.${i + 1}`);
  const initialCluster = hosts.map((h, i) => `m${i + 1}=${etcdPeerUrl(h)}`).join(",");
  const members: EtcdMemberProcess[] = [];
  const rssBefore = mib();
  const obs = new EtcdObserver(ca, await issueCert(ca, { commonName: "nico", usage: "client", days: 1 }), {
    intervalMs: 3_600_000,
    timeoutMs: 2_000,
    policy: "loopback",
    onChange: () => {},
    key: "bench/c",
    log: silentLogger,
  });
  try {
    for (const [i, host] of hosts.entries()) {
      members.push(
        await startEtcdMember({ name: `m${i + 1}`, host, ca, initialCluster, state: "new", dir: `${dir}/${i}` }),
      );
    }
    obs.watch(hosts.map((h) => ({ host: h, url: etcdClientUrl(h) })));
    await eventually(
      "every member healthy",
      async () => {
        const s = await obs.look();
        return s.members?.length === n && s.statuses.size === n &&
          [...s.statuses.values()].every((x) => x.leader !== "0");
      },
      60_000,
      200,
    );
    const refresh: number[] = [];
    let requests = 0;
    for (let k = 0; k < ROUNDS; k++) {
      const s = await obs.look();
      refresh.push(s.cost!.ms);
      requests = s.cost!.requests;
    }
    const list: number[] = [];
    const status: number[] = [];
    for (let k = 0; k < ROUNDS; k++) {
      let t = performance.now();
      await obs.client.members(etcdClientUrl(hosts[0]!));
      list.push(performance.now() - t);
      t = performance.now();
      await obs.client.status(etcdClientUrl(hosts[k % n]!));
      status.push(performance.now() - t);
    }
    const r = stats(refresh);
    const l = stats(list);
    const st = stats(status);
    console.log(
      `${n} members: one refresh ${requests} requests, median ${r.median.toFixed(1)} ms, worst ${
        r.worst.toFixed(1)
      } ms; ` +
        `member list median ${l.median.toFixed(1)} ms; status median ${st.median.toFixed(1)} ms; ` +
        `rss ${rssBefore} → ${mib()} MiB (the etcd members are other processes)`,
    );
  } finally {
    await obs.close();
    for (const m of members) await m.stop();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

if (import.meta.main) {
  await measure(3, 81);
  await measure(5, 82);
}
