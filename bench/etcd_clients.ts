/**
 * Two etcd clients side by side on the same real members (the envtest's etcd
 * 3.7.0, three members on loopback, TLS with client certificates): NICO's
 * lib/etcd/client.ts (etcd's HTTP/JSON gateway over `fetch`) and the npm
 * `etcd3` package (gRPC over `@grpc/grpc-js`, pinned here and used nowhere
 * but this file). Each client runs in a child process of its own, so its
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
import type { Etcd3 } from "npm:etcd3@1.1.2";
import { Buffer } from "node:buffer";
import { EtcdClient } from "../lib/etcd/client.ts";
import { createCa, issueCert } from "../lib/pki.ts";
import { etcdClientUrl, type EtcdMemberProcess, etcdPeerUrl, startEtcdMember } from "../testing/etcd.ts";
import { eventually } from "../testing/helpers.ts";

const ROUNDS = 30;
const HOSTS = ["127.0.89.1", "127.0.89.2", "127.0.89.3"];
/** The name member i's certificate carries beside its address (example.test: a name that resolves nowhere). */
const nameOf = (url: string) => `m${HOSTS.findIndex((h) => url.includes(h)) + 1}.etcd.example.test`;
type Pems = { caPem: string; certPem: string; keyPem: string };
/** The three requests a client makes, each against one member's client URL. */
interface Calls {
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

/**
 * etcd3 balances across its hosts: one Etcd3 per member, so each request goes where it is meant to. Deno's TLS
 * takes no IP address as the server name gRPC sends, so it asks for the name each member's certificate also carries.
 */
async function grpc(p: Pems): Promise<Calls> {
  // Loaded here, so the gateway's child never loads it and the figures count its code too.
  const { Etcd3 } = await import("npm:etcd3@1.1.2");
  const byUrl = new Map<string, Etcd3>();
  const at = (url: string) => {
    let c = byUrl.get(url);
    if (!c) {
      c = new Etcd3({
        hosts: [url],
        credentials: {
          rootCertificate: Buffer.from(p.caPem),
          certChain: Buffer.from(p.certPem),
          privateKey: Buffer.from(p.keyPem),
        },
        dialTimeout: 2_000,
        grpcOptions: { "grpc.ssl_target_name_override": nameOf(url), "grpc.default_authority": nameOf(url) },
      });
      byUrl.set(url, c);
    }
    return c;
  };
  return {
    members: (u) => at(u).cluster.memberList({}),
    status: (u) => at(u).maintenance.status({}),
    alarms: (u) => at(u).maintenance.alarm({ action: "Get", memberID: "0", alarm: "None" }),
    close: () => byUrl.forEach((c) => c.close()),
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
  const c = kind === "etcd3" ? await grpc(p) : gateway(p);
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
        args: ["run", "--allow-all", import.meta.filename!, kind, `${dir}/pems.json`],
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
