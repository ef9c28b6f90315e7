/**
 * Two etcd clients side by side on the same real members (the envtest's etcd
 * 3.7.0, three members on loopback, TLS with client certificates): NICO's
 * lib/etcd/client.ts (etcd's HTTP/JSON gateway over `fetch`) and the npm
 * `etcd3` package (gRPC over `@grpc/grpc-js`, pinned in bench/etcd3/deno.json
 * and used nowhere but bench/etcd3/grpc.ts). Each client runs in a child process of its own, so its
 * memory is its own: the first request (connection and TLS set-up), then
 * medians and worst of 30 member lists, 30 status requests and 30 refreshes
 * as NICO's observer makes them (member list, every member's status in
 * parallel, alarms), and the child's RSS before the client (and before
 * `etcd3` is loaded) and after.
 * Prints figures; not a test.
 *
 *   deno task bench:etcd-clients
 *
 * @module
 */
import { EtcdClient } from "../lib/etcd/client.ts";
import { createCa, issueCert } from "../lib/pki.ts";
import { etcdClientUrl, type EtcdMemberProcess, etcdPeerUrl, startEtcdMember } from "../testing/etcd.ts";
import { eventually } from "../testing/helpers.ts";

const ROUNDS = 30;
/**
 * The `etcd3` client, loaded by the etcd3 child alone. It lives under bench/etcd3/ with a Deno config and lock of its
 * own (the children run with that config): `etcd3` and its gRPC and protobuf packages stay out of NICO's graph and
 * deno.lock, so no other run fetches them (nor prints protobufjs' build-script warning).
 */
const GRPC = new URL("./etcd3/grpc.ts", import.meta.url).href;
const CHILD_CONFIG = new URL("./etcd3/deno.json", import.meta.url).pathname;
const HOSTS = ["127.0.89.1", "127.0.89.2", "127.0.89.3"];
/** The name member i's certificate carries beside its address (example.test: a name that resolves nowhere). */
const nameOf = (url: string) => `m${HOSTS.findIndex((h) => url.includes(h)) + 1}.etcd.example.test`;
export type Pems = { caPem: string; certPem: string; keyPem: string };
/** The three requests a client makes, each against one member's client URL. */
export interface Calls {
  members(url: string): Promise<unknown>;
  status(url: string): Promise<unknown>;
  alarms(url: string): Promise<unknown>;
  close(): void;
}

function gateway(p: Pems): Calls {
  const c = new EtcdClient({ ...p, timeoutMs: 2_000 });
  return {
    members: (u) => c.members(u),
    status: (u) => c.status(u),
    alarms: (u) => c.alarms(u),
    close: () => c.close(),
  };
}

const stats = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return `median ${s[Math.floor(s.length / 2)]!.toFixed(1)} ms, worst ${s[s.length - 1]!.toFixed(1)} ms`;
};
const mib = () => (Deno.memoryUsage().rss / 1024 / 1024).toFixed(0);
const timed = async (fn: () => Promise<unknown>) => {
  const t = performance.now();
  await fn();
  return performance.now() - t;
};

/** The child: one client, its figures on one line. */
async function child(kind: string, p: Pems): Promise<void> {
  const before = mib();
  const c = kind === "etcd3"
    ? await (await import(GRPC) as { grpc(p: Pems, name: typeof nameOf): Promise<Calls> }).grpc(p, nameOf)
    : gateway(p);
  const urls = HOSTS.map((h) => etcdClientUrl(h));
  const first = await timed(() => c.members(urls[0]!));
  const list: number[] = [];
  const status: number[] = [];
  const refresh: number[] = [];
  for (let k = 0; k < ROUNDS; k++) {
    list.push(await timed(() => c.members(urls[0]!)));
    status.push(await timed(() => c.status(urls[k % urls.length]!)));
    refresh.push(
      await timed(async () => {
        await c.members(urls[0]!);
        await Promise.all([...urls.map((u) => c.status(u)), c.alarms(urls[0]!)]);
      }),
    );
  }
  console.log(
    `${kind}: first request ${first.toFixed(1)} ms; member list ${stats(list)}; status ${stats(status)}; ` +
      `refresh of 3 (5 requests) ${stats(refresh)}; rss ${before} → ${mib()} MiB`,
  );
  c.close();
}

async function main(): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "nico-bench-etcd-clients-" });
  const ca = await createCa({ commonName: "bench-etcd-ca" });
  const cert = await issueCert(ca, { commonName: "nico", usage: "client", days: 1 });
  const pems: Pems = { caPem: ca.certPem, certPem: cert.certPem, keyPem: cert.keyPem };
  await Deno.writeTextFile(`${dir}/pems.json`, JSON.stringify(pems));
  const initialCluster = HOSTS.map((h, i) => `m${i + 1}=${etcdPeerUrl(h)}`).join(",");
  const members: EtcdMemberProcess[] = [];
  try {
    for (const [i, host] of HOSTS.entries()) {
      members.push(
        await startEtcdMember({
          name: `m${i + 1}`,
          host,
          ca,
          initialCluster,
          state: "new",
          dir: `${dir}/${i}`,
          dnsNames: [nameOf(host)],
        }),
      );
    }
    const check = gateway(pems);
    await eventually(
      "a leader",
      async () =>
        (await Promise.all(HOSTS.map((h) => check.status(etcdClientUrl(h)))))
          .every((s) => (s as { leader: string }).leader !== "0"),
      60_000,
      200,
    );
    check.close();
    for (const kind of ["gateway", "etcd3", "gateway", "etcd3"]) {
      const out = await new Deno.Command(Deno.execPath(), {
        args: ["run", "--allow-all", "--config", CHILD_CONFIG, import.meta.filename!, kind, `${dir}/pems.json`],
        stdout: "inherit",
        stderr: "inherit",
      }).output();
      if (!out.success) throw new Error(`the ${kind} child failed`);
    }
  } finally {
    for (const m of members) await m.stop();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

if (import.meta.main) {
  const [kind, pems] = Deno.args;
  if (kind && pems) await child(kind, JSON.parse(await Deno.readTextFile(pems)));
  else await main();
}
