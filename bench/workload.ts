/**
 * What workload-cluster connections cost NICO: for N clusters, what NICO keeps open per cluster (the workload
 * cache's connection: a `/readyz` probe and the Nodes; the `/version` of its control-plane node; an etcd observer),
 * against one real kube-apiserver and one etcd member (TLS, client certificates) on loopback that stand in for N
 * clusters, each cluster with its own kubeconfig, client certificates and HTTP clients. Each size runs in a process
 * of its own with the Deployment's V8 flags (deploy/v8-flags). Prints figures; asserts nothing.
 *
 *   deno task bench:workload [--connections 200,1000] [--nodes 3] [--settle 25] [--max-watches N]
 *     [--open-timeout 300] [--block 83]
 *
 * @module
 */
import { parseArgs } from "node:util";
import { NODES } from "../lib/kube/resources.ts";
import { createCa } from "../lib/pki.ts";
import { startControlPlane } from "../testing/envtest/controlplane.ts";
import { etcdClientUrl, etcdPeerUrl, startEtcdMember } from "../testing/etcd.ts";
import { NODE_API_PORT } from "../controllers/cluster/workload/versions.ts";
import type { Setup } from "./workload/child.ts";
import type { Sample } from "./workload/procfs.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    connections: { type: "string", default: "200,1000" },
    nodes: { type: "string", default: "3" },
    settle: { type: "string", default: "25" },
    "max-watches": { type: "string" },
    "open-timeout": { type: "string", default: "300" },
    block: { type: "string", default: "83" },
  },
});
const sizes = values.connections!.split(",").map(Number);
const HOST = `127.0.${values.block}.1`; // the bench's own loopback block (bench/etcd.ts has 81 and 82)
const v8Flags = (await Deno.readTextFile(new URL("../deploy/v8-flags", import.meta.url))).trim();
const mib = (b: number) => (b / 1024 / 1024).toFixed(1);
const kib = (b: number) => (b / 1024).toFixed(0);

const dir = await Deno.makeTempDir({ prefix: "nico-bench-workload-" });
const ca = await createCa({ commonName: "bench-workload-ca" });
const etcdCa = await createCa({ commonName: "bench-workload-etcd-ca" });
const etcd = await startEtcdMember({
  name: "m1",
  host: HOST,
  ca: etcdCa,
  initialCluster: `m1=${etcdPeerUrl(HOST)}`,
  state: "new",
  dir: `${dir}/etcd`,
});
const cp = await startControlPlane({ ca, host: HOST, port: NODE_API_PORT, crds: [] });
try {
  const nodes = Number(values.nodes);
  for (let i = 0; i < nodes; i++) await cp.client.create(NODES, { metadata: { name: `node-${i}` } });
  const setup: Setup = {
    server: cp.server,
    host: HOST,
    ca,
    etcdCa,
    etcdUrl: etcdClientUrl(HOST),
    nodes,
    settleMs: Number(values.settle) * 1000,
    openTimeoutMs: Number(values["open-timeout"]) * 1000,
    cache: values["max-watches"] ? { maxWatches: Number(values["max-watches"]) } : {},
  };
  await Deno.writeTextFile(`${dir}/setup.json`, JSON.stringify(setup), { mode: 0o600 });
  console.log(
    `one kube-apiserver (${nodes} Nodes) and one etcd member stand in for every cluster; V8 flags ${v8Flags}; ` +
      `load ${(await Deno.readTextFile("/proc/loadavg")).split(" ").slice(0, 3).join(" ")}`,
  );
  console.log(
    "clusters  open   RSS base  RSS open  RSS steady  per cluster  heap/cl  external/cl  peak RSS  sockets  per cluster",
  );
  for (const n of sizes) {
    const out = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        `--v8-flags=${v8Flags},--expose-gc`,
        new URL("./workload/child.ts", import.meta.url).pathname,
        `${dir}/setup.json`,
        String(n),
      ],
      stdout: "piped",
      stderr: "inherit",
    }).output();
    const line = new TextDecoder().decode(out.stdout).trim().split("\n").pop() ?? "";
    if (!out.success || !line.startsWith("{")) {
      console.log(`${n}: the child failed (${out.code})`);
      continue;
    }
    const r = JSON.parse(line) as {
      openMs: number;
      notReady: number;
      readyAtEnd: number;
      watching?: number;
      before: Sample;
      open: Sample;
      steady: Sample;
      heapLimit: number;
    };
    const per = (f: (s: Sample) => number) => (f(r.steady) - f(r.before)) / n;
    console.log(
      `${String(n).padStart(8)}  ${(r.openMs / 1000).toFixed(1).padStart(4)} s  ${mib(r.before.rss).padStart(5)} MiB` +
        `  ${mib(r.open.rss).padStart(4)} MiB  ${mib(r.steady.rss).padStart(6)} MiB  ${
          kib(per((s) => s.rss)).padStart(7)
        } KiB` +
        `  ${kib(per((s) => s.heapUsed)).padStart(3)} KiB  ${kib(per((s) => s.external)).padStart(7)} KiB` +
        `  ${mib(r.steady.peakRss).padStart(4)} MiB  ${String(r.steady.sockets).padStart(7)}` +
        `  ${per((s) => s.sockets).toFixed(2).padStart(11)}`,
    );
    console.log(
      `          heap used ${mib(r.steady.heapUsed)} MiB of ${mib(r.heapLimit)} MiB; external ${
        mib(r.steady.external)
      } MiB; ${
        r.notReady ? `${r.notReady} not ready when the open timed out; ` : ""
      }ready after settling ${r.readyAtEnd}/${n}${r.watching === undefined ? "" : `; watching ${r.watching}`}; load ${
        Deno.readTextFileSync("/proc/loadavg").split(" ").slice(0, 3).join(" ")
      }`,
    );
  }
} finally {
  await cp.stop();
  await etcd.stop();
  await Deno.remove(dir, { recursive: true }).catch(() => {});
}
