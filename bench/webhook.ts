/**
 * Benchmark of the validating webhook on loopback TLS (prints figures; not a
 * timed test). The server runs in a child process, as a replica would; this
 * process is the load generator, over HTTP/1.1 (the webhook does not offer
 * HTTP/2; the API server falls back to HTTP/1.1).
 *
 * For each endpoint — a trivial Hono handler on the same TLS server (the
 * ceiling), the validating webhook admitting a cluster, and refusing one:
 *   1. open loop at `--rate` requests per second for `--seconds` seconds:
 *      requests leave on schedule, whether or not earlier ones answered
 *      → p50, p99, max, and the server's own handler time meanwhile;
 *   2. closed loop: `--concurrency` requests in flight, for at most
 *      `--requests` requests or `--seconds` seconds → requests per second;
 * and, for reference, the handler alone through `app.request()`.
 *
 * Caveats when reading the figures: the client is Deno's fetch, which does
 * not set TCP_NODELAY (the API server's Go client does), so Nagle's
 * algorithm adds to the client side's tail; and on a shared machine other
 * processes compete for the same cores. The handler time line isolates
 * NICO's own cost. `--server-v8-flags` passes V8 flags to the server.
 *
 * Then the abuse scenario (bench/webhook_abuse.ts): random paths,
 * slowloris, 20,000 held connections, 64 concurrent ~3 MB bodies, with the
 * server's RSS before, at peak and after each.
 *
 * Run from the repository root:
 *   deno run -A bench/webhook.ts [--concurrency 32] [--requests 20000] [--seconds 5] [--rate 1000]
 *     [--scenario all|perf|abuse] [--attacks 5,6] [--server nico|deno-serve] [--json FILE]
 * (`--server deno-serve`: Deno.serve behind a TCP front instead of NICO's HTTP layer, bench/webhook_denoserve.ts)
 * (`--json`: the open- and closed-loop figures of each endpoint, for `deno task bench`)
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
import { VALIDATE_PATH } from "../webhooks/paths.ts";
import { DEFAULT_LIMITS, startWebhookServer } from "../webhooks/server.ts";
import { serveDenoBehindFront } from "./webhook_denoserve.ts";
import { Metrics } from "../lib/metrics.ts";
import { runAbuse } from "./webhook_abuse.ts";

const NS = "bench";
const MAX_REQUESTS = 200_000;
const MAX_SECONDS = 30;

/** A namespace as a busy one looks: 200 Machines, 10 clusters of 3 + 5 with their configurations. */
function objects() {
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
async function serve(kind: "nico" | "deno-serve"): Promise<void> {
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

/** The server's own handler timings since the last call. */
async function serverStats(client: Deno.HttpClient, base: string) {
  const res = await fetch(`${base}/stats`, { method: "POST", client });
  return await res.json() as { count: number; p50: number; p99: number; max: number };
}

interface Target {
  name: string;
  path: string;
  body: string;
  /** Checks one answer. */
  ok: (json: { response?: { allowed?: boolean }; ok?: boolean }) => boolean;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

const fmt = (ms: number) => `${ms.toFixed(2)} ms`;

async function send(client: Deno.HttpClient, url: string, t: Target): Promise<void> {
  const res = await fetch(url, {
    method: "POST",
    body: t.body,
    headers: { "content-type": "application/json" },
    client,
  });
  const json = await res.json();
  if (res.status !== 200 || !t.ok(json)) {
    throw new Error(`${t.name}: unexpected answer ${res.status} ${JSON.stringify(json)}`);
  }
}

/** Closed loop: `concurrency` in flight until `requests` are done or `seconds` pass. */
async function closedLoop(
  client: Deno.HttpClient,
  url: string,
  t: Target,
  concurrency: number,
  requests: number,
  seconds: number,
) {
  const latencies: number[] = [];
  const deadline = performance.now() + seconds * 1000;
  let issued = 0;
  const started = performance.now();
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (issued < requests && performance.now() < deadline) {
      issued++;
      const t0 = performance.now();
      await send(client, url, t);
      latencies.push(performance.now() - t0);
    }
  }));
  const elapsed = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  return {
    rps: latencies.length / elapsed,
    count: latencies.length,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
  };
}

/**
 * Open loop at `rate` per second for `seconds`: requests leave on schedule
 * whether or not earlier ones have answered. Latency is measured from the
 * moment each request is sent; `lag` is how late the sender was against the
 * schedule (timer granularity), reported so a slow generator shows.
 */
async function openLoop(client: Deno.HttpClient, url: string, t: Target, rate: number, seconds: number) {
  let failed = 0;
  const total = Math.min(MAX_REQUESTS, Math.round(rate * seconds));
  const interval = 1000 / rate;
  const latencies: number[] = [];
  const lags: number[] = [];
  const inflight: Promise<void>[] = [];
  const start = performance.now();
  let next = 0;
  while (next < total) {
    const now = performance.now();
    while (next < total && start + next * interval <= now) {
      lags.push(now - (start + next * interval));
      inflight.push(
        send(client, url, t).then(() => void latencies.push(performance.now() - now), () => void failed++),
      );
      next++;
    }
    await new Promise((r) => setTimeout(r, 0));
  }
  await Promise.all(inflight);
  const elapsed = (performance.now() - start) / 1000;
  latencies.sort((a, b) => a - b);
  lags.sort((a, b) => a - b);
  return {
    achieved: latencies.length / elapsed,
    failed,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    max: latencies.at(-1) ?? NaN,
    lagP99: percentile(lags, 99),
  };
}

/** The handler alone, without TLS or HTTP: `app.request()` in this process. */
async function inProcess(t: Target, iterations: number) {
  const app = webhookApp({
    lookup: staticLookup(objects()),
    access: staticAccess([]),
    defaultGitRepo: "https://git.example.test/flake.git",
  });
  app.post("/trivial", (c) => c.json({ ok: true }));
  const times: number[] = [];
  for (let i = 0; i < iterations; i++) {
    const t0 = performance.now();
    const res = await app.request(t.path, {
      method: "POST",
      body: t.body,
      headers: { "content-type": "application/json" },
    });
    if (!t.ok(await res.json())) throw new Error(`${t.name}: unexpected answer in process`);
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  return { p50: percentile(times, 50), p99: percentile(times, 99) };
}

/** The webhook server in a child process (`--serve`); answers once it listens, with its port and CA. */
async function startServer(server: string, v8Flags: string) {
  const config = new URL("../deno.json", import.meta.url).pathname;
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      `--config=${config}`,
      ...(v8Flags ? [`--v8-flags=${v8Flags}`] : []),
      new URL(import.meta.url).pathname,
      "--serve",
      `--server=${server}`,
    ],
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const stdinWriter = child.stdin.getWriter();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let first = "";
  while (!first.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) throw new Error("the server process exited before listening");
    first += value;
  }
  const { port, ca } = JSON.parse(first.slice(0, first.indexOf("\n"))) as { port: number; ca: string };
  // Anything else the server prints (such as --trace-gc) goes to stderr, so its pipe never fills.
  const drained = (async () => {
    const rest = first.slice(first.indexOf("\n") + 1);
    if (rest) console.error(rest.trimEnd());
    for (let r = await reader.read(); !r.done; r = await reader.read()) {
      Deno.stderr.writeSync(new TextEncoder().encode(r.value));
    }
  })();
  return { child, stdinWriter, port, ca, drained };
}

/** What the benchmark sends: a trivial handler (the ceiling), an allowed and a refused validation. */
function targets(): Target[] {
  return [
    { name: "trivial Hono handler (ceiling)", path: "/trivial", body: "{}", ok: (j) => j.ok === true },
    {
      name: "validate: allowed (3 + 2 Machines)",
      path: VALIDATE_PATH,
      body: review({
        gitRepo: "https://git.example.test/flake.git",
        controlPlane: { machines: ["m-100", "m-102", "m-104"] },
        dataPlane: { machines: ["m-101", "m-103"] },
      }),
      ok: (j) => j.response?.allowed === true,
    },
    {
      name: "validate: refused (Machines of other clusters)",
      path: VALIDATE_PATH,
      body: review({ controlPlane: { machines: ["m-0", "m-1", "m-999"] } }),
      ok: (j) => j.response?.allowed === false,
    },
  ];
}

/** The load of one run: open-loop rate, closed-loop concurrency and request cap, and the time for each. */
interface Load {
  concurrency: number;
  requests: number;
  seconds: number;
  rate: number;
}

/** One target: warm-up, open loop (with the server's own handler times), in process, closed loop; printed. */
async function measure(client: Deno.HttpClient, base: string, t: Target, load: Load) {
  const { concurrency, requests, seconds, rate } = load;
  const url = base + t.path;
  for (let i = 0; i < 300; i++) await send(client, url, t); // warm-up
  await serverStats(client, base);
  const open = await openLoop(client, url, t, rate, seconds);
  const handler = await serverStats(client, base);
  const local = await inProcess(t, 3000);
  await new Promise((r) => setTimeout(r, 500));
  const closed = await closedLoop(client, url, t, concurrency, requests, seconds);
  await new Promise((r) => setTimeout(r, 500));
  console.log(t.name);
  console.log(`  in process (app.request, no TLS): p50 ${fmt(local.p50)}, p99 ${fmt(local.p99)}`);
  console.log(
    `  open loop at ${rate}/s: achieved ${open.achieved.toFixed(0)}/s (${open.failed} failed), ` +
      `p50 ${fmt(open.p50)}, ` +
      `p99 ${fmt(open.p99)}, max ${fmt(open.max)} (sender lag p99 ${fmt(open.lagP99)})`,
  );
  console.log(
    `    server handler time meanwhile: p50 ${fmt(handler.p50)}, p99 ${fmt(handler.p99)}, max ${fmt(handler.max)}`,
  );
  console.log(
    `  closed loop: ${closed.rps.toFixed(0)} req/s over ${closed.count} requests, ` +
      `p50 ${fmt(closed.p50)}, p99 ${fmt(closed.p99)}`,
  );
  return {
    name: t.name,
    rate,
    achieved: Math.round(open.achieved),
    p50Ms: open.p50,
    p99Ms: open.p99,
    closedRps: Math.round(closed.rps),
  };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      serve: { type: "boolean", default: false },
      concurrency: { type: "string", default: "32" },
      requests: { type: "string", default: "20000" },
      seconds: { type: "string", default: "5" },
      rate: { type: "string", default: "1000" },
      "server-v8-flags": { type: "string", default: "" },
      scenario: { type: "string", default: "all" },
      server: { type: "string", default: "nico" },
      attacks: { type: "string", default: "" },
      json: { type: "string" },
    },
  });
  if (values.server !== "nico" && values.server !== "deno-serve") throw new Error("--server is nico or deno-serve");
  if (values.serve) return await serve(values.server);
  const load: Load = {
    concurrency: Math.max(1, Math.min(256, Number(values.concurrency))),
    requests: Math.max(1, Math.min(MAX_REQUESTS, Number(values.requests))),
    seconds: Math.max(1, Math.min(MAX_SECONDS, Number(values.seconds))),
    rate: Math.max(1, Math.min(20_000, Number(values.rate))),
  };
  const { child, stdinWriter, port, ca, drained } = await startServer(values.server, values["server-v8-flags"]);
  const client = Deno.createHttpClient({ caCerts: [ca] });
  const base = `https://127.0.0.1:${port}`;
  const all = targets();

  console.log(
    `loopback TLS (HTTP/1.1), server in a child process; ${navigator.hardwareConcurrency} CPUs; Deno ${Deno.version.deno}`,
  );
  console.log(
    `closed loop: ${load.concurrency} in flight, <= ${load.requests} requests or ${load.seconds} s; open loop: ${load.rate}/s for ${load.seconds} s\n`,
  );
  const figures: { name: string; rate: number; achieved: number; p50Ms: number; p99Ms: number; closedRps: number }[] =
    [];
  try {
    for (const t of values.scenario === "abuse" ? [] : all) figures.push(await measure(client, base, t, load));
    if (values.json) await Deno.writeTextFile(values.json, JSON.stringify(figures, null, 2) + "\n");
    if (values.scenario !== "perf") {
      const only = values.attacks ? values.attacks.split(",").map(Number) : undefined;
      await runAbuse({ port, ca, pid: child.pid, admission: { path: all[1]!.path, body: all[1]!.body } }, only);
    }
  } finally {
    client.close();
    await stdinWriter.close().catch(() => {});
    await child.status;
    await drained;
  }
}

if (import.meta.main) await main();
