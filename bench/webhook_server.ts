/**
 * The webhook benchmark's server (bench/webhook.ts runs it in a child process, as a replica would): the validating
 * webhook over a namespace as a busy one looks, on loopback TLS, with NICO's HTTP layer or Deno.serve behind a TCP
 * front (`--server deno-serve`). It prints `{"port":…,"ca":…}` and serves until stdin closes; `POST /stats` answers
 * and resets its handler timings, `POST /trivial` is the ceiling.
 *
 * @module
 */
import { parseArgs } from "node:util";
import type { KubernetesCluster } from "../crds/kubernetescluster.ts";
import { CLUSTER_LABEL } from "../core/contract/labels.ts";
import { ownedConfig } from "../testing/objects.ts";
import type { Machine, NixosConfiguration } from "../core/contract/nio.ts";
import { createCa, issueCert } from "../lib/pki.ts";
import { webhookApp } from "../webhooks/app.ts";
import { staticLookup } from "../webhooks/lookup.ts";
import { staticAccess } from "../webhooks/authorize.ts";
import { DEFAULT_LIMITS, startWebhookServer } from "../webhooks/server.ts";
import { serveDenoBehindFront } from "./webhook_denoserve.ts";
import { Metrics } from "../lib/metrics.ts";
import { percentile } from "./webhook_loads.ts";

const NS = "bench";

/** A namespace as a busy one looks: 200 Machines, 10 clusters of 3 + 5 with their configurations. */
export function objects() {
  const machines: Machine[] = [];
  const configurations: NixosConfiguration[] = [];
  const clusters: KubernetesCluster[] = [];
  for (let i = 0; i < 200; i++) {
    machines.push({
      metadata: { name: `m-${i}`, namespace: NS, labels: { role: i % 2 ? "worker" : "cp" } },
      status: { discoverable: true },
    });
  }
  for (let c = 0; c < 10; c++) {
    const name = `c-${c}`;
    const cp = [0, 1, 2].map((j) => `m-${c * 8 + j}`);
    const dp = [3, 4, 5, 6, 7].map((j) => `m-${c * 8 + j}`);
    clusters.push({
      apiVersion: "nico.homystack.com/v1alpha1",
      kind: "KubernetesCluster",
      metadata: { name, namespace: NS, uid: `uid-${c}` },
      spec: {
        controlPlane: { machines: cp },
        dataPlane: { machines: dp },
        fullInstall: false,
      } as KubernetesCluster["spec"],
    });
    for (const m of [...cp, ...dp]) {
      const machine = machines.find((x) => x.metadata.name === m)!;
      machine.metadata.labels![CLUSTER_LABEL] = name;
      configurations.push(ownedConfig(name, m, cp.includes(m) ? "control-plane" : "worker", `uid-${c}`, NS));
    }
  }
  return { machines, configurations, clusters };
}

/** An AdmissionReview creating cluster `new` in the benchmark namespace with `spec`. */
export function review(spec: unknown): string {
  return JSON.stringify({
    apiVersion: "admission.k8s.io/v1",
    kind: "AdmissionReview",
    request: {
      uid: "bench",
      kind: { group: "nico.homystack.com", version: "v1alpha1", kind: "KubernetesCluster" },
      operation: "CREATE",
      namespace: NS,
      name: "new",
      object: {
        apiVersion: "nico.homystack.com/v1alpha1",
        kind: "KubernetesCluster",
        metadata: { name: "new", namespace: NS },
        spec,
      },
    },
  });
}

/** Child: the server. Prints `{"port":…}` and serves until stdin closes; `POST /stats` answers and resets its handler timings. */
export async function serve(kind: "nico" | "deno-serve"): Promise<void> {
  const ca = await createCa({ commonName: "bench-ca" });
  const tls = await issueCert(ca, { commonName: "127.0.0.1", ipAddresses: ["127.0.0.1"], usage: "server", days: 1 });
  const metrics = new Metrics();
  const app = webhookApp({
    lookup: staticLookup(objects()),
    access: staticAccess([]),
    defaultGitRepo: "https://git.example.test/flake.git",
    metrics,
  });
  app.get("/bench/metrics", async (c) => c.text(await metrics.text()));
  let times: number[] = [];
  app.post("/trivial", (c) => c.json({ ok: true }));
  app.post("/stats", (c) => {
    const sorted = times.sort((a, b) => a - b);
    times = [];
    return c.json({
      count: sorted.length,
      p50: percentile(sorted, 50),
      p99: percentile(sorted, 99),
      max: sorted.at(-1) ?? NaN,
    });
  });
  const timed = {
    fetch: async (req: Request) => {
      const t0 = performance.now();
      const res = await app.fetch(req);
      times.push(performance.now() - t0);
      return res;
    },
  };
  const server = kind === "deno-serve"
    ? serveDenoBehindFront({ fetch: timed.fetch, pair: tls, limits: DEFAULT_LIMITS })
    : await startWebhookServer({ app: timed, hostname: "127.0.0.1", port: 0, tls });
  console.log(JSON.stringify({ port: server.port, ca: ca.certPem }));
  for await (const _ of Deno.stdin.readable) { /* wait for EOF */ }
  await server.stop();
}

if (import.meta.main) {
  const { values } = parseArgs({ args: Deno.args, options: { server: { type: "string", default: "nico" } } });
  if (values.server !== "nico" && values.server !== "deno-serve") throw new Error("--server is nico or deno-serve");
  await serve(values.server);
}
