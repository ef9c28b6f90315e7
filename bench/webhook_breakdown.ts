/**
 * Where a webhook request's time goes (prints figures; not a timed test).
 * One server child process serves variants of the same request, each adding
 * one layer to the trivial handler; the client sends them one at a time
 * (no queueing) over TLS with HTTP/2, TLS with HTTP/1.1, and plain HTTP.
 * Besides latency it reports the server's and the client's CPU time per
 * request (from `process.cpuUsage()`), which a busy shared machine disturbs
 * far less than latency percentiles.
 *
 * Variants: `trivial` (c.json, no body read), `read` (reads the body, answers
 * a fixed AdmissionReview), `parse` (+ parseReview), `validate` (the real
 * validating handler), `+metrics` (+ the metrics wrapper `nico run` puts
 * around the app, which re-parses each answer to count the outcome).
 *
 * Run: deno run -A bench/webhook_breakdown.ts [--requests 3000]
 *
 * @module
 */
import process from "node:process";
import { parseArgs } from "node:util";
import { Metrics } from "../lib/metrics.ts";
import { createCa, issueCert } from "../lib/pki.ts";
import { allow, parseReview } from "../webhooks/admission.ts";
import { webhookApp } from "../webhooks/app.ts";
import { staticLookup } from "../webhooks/lookup.ts";
import { staticAccess } from "../webhooks/authorize.ts";
import { VALIDATE_PATH } from "../webhooks/paths.ts";
import { review } from "./webhook_server.ts";

const NS = "bench";

function objects() {
  const machines = Array.from({ length: 200 }, (_, i) => ({
    metadata: { name: `m-${i}`, namespace: NS, labels: { role: i % 2 ? "worker" : "cp" } },
    status: { discoverable: true },
  }));
  return { machines, configurations: [], clusters: [] };
}

const BODY = review({ controlPlane: { machines: ["m-0", "m-2", "m-4"] }, dataPlane: { machines: ["m-1", "m-3"] } });

const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

/** Child: one server for every variant, TLS (h2 + h1) and plain. Prints its ports. */
async function serve(): Promise<void> {
  const ca = await createCa({ commonName: "bench-ca" });
  const tls = await issueCert(ca, { commonName: "127.0.0.1", ipAddresses: ["127.0.0.1"], usage: "server", days: 1 });
  const app = webhookApp({
    lookup: staticLookup(objects()),
    access: staticAccess([]),
    defaultGitRepo: "https://git.example.test/flake.git",
  });
  const fixed = JSON.stringify(allow("bench"));
  app.post("/trivial", (c) => c.json({ ok: true }));
  app.post("/read", async (c) => {
    await c.req.text();
    return c.body(fixed, 200, { "content-type": "application/json" });
  });
  app.post("/parse", async (c) => {
    parseReview(await c.req.text());
    return c.body(fixed, 200, { "content-type": "application/json" });
  });
  app.post("/cpu", (c) => c.json({ cpuMs: cpuMs() }));
  const metrics = new Metrics();
  const handler = async (req: Request): Promise<Response> => {
    if (!req.headers.has("x-bench-metered")) return await app.fetch(req);
    // The wrapper of `nico run` (cli/run.ts): a histogram timer, and the answer parsed again for the outcome.
    const path = new URL(req.url).pathname;
    const end = metrics.webhookLatency.startTimer({ path });
    const res = await app.fetch(req);
    end();
    const body = await res.clone().json().catch(() => undefined) as { response?: { allowed?: boolean } } | undefined;
    metrics.webhookRequests.inc({ path, outcome: body?.response?.allowed ? "allowed" : "denied" });
    return res;
  };
  const secure = Deno.serve(
    { hostname: "127.0.0.1", port: 0, cert: tls.certPem, key: tls.keyPem, onListen() {} },
    handler,
  );
  const plain = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, handler);
  console.log(JSON.stringify({ secure: secure.addr.port, plain: plain.addr.port, ca: ca.certPem }));
  for await (const _ of Deno.stdin.readable) { /* until EOF */ }
  await Promise.all([secure.shutdown(), plain.shutdown()]);
}

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}

async function main() {
  const { values } = parseArgs({ args: Deno.args, options: { requests: { type: "string", default: "3000" } } });
  const n = Number(values.requests);
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", new URL(import.meta.url).pathname, "--serve"],
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let first = "";
  while (!first.includes("\n")) first += (await reader.read()).value ?? "";
  const info = JSON.parse(first) as { secure: number; plain: number; ca: string };
  const transports = [
    {
      name: "TLS + HTTP/2",
      base: `https://127.0.0.1:${info.secure}`,
      client: Deno.createHttpClient({ caCerts: [info.ca], http1: false }),
    },
    {
      name: "TLS + HTTP/1.1",
      base: `https://127.0.0.1:${info.secure}`,
      client: Deno.createHttpClient({ caCerts: [info.ca], http2: false }),
    },
    { name: "plain HTTP/1.1", base: `http://127.0.0.1:${info.plain}`, client: Deno.createHttpClient({ http2: false }) },
  ];
  const variants = ["/trivial", "/read", "/parse", VALIDATE_PATH, `${VALIDATE_PATH} +metrics`];
  console.log(`sequential requests (one in flight), ${n} per row; CPU per request from process.cpuUsage()`);
  console.log(`load average at start: ${Deno.loadavg().map((x) => x.toFixed(2)).join(" ")}`);
  for (const t of transports) {
    console.log(t.name);
    const serverCpu = async () =>
      (await (await fetch(`${t.base}/cpu`, { method: "POST", client: t.client })).json()).cpuMs as number;
    for (const v of variants) {
      const send = async () => {
        const metered = v.endsWith(" +metrics");
        const res = await fetch(`${t.base}${v.replace(" +metrics", "")}`, {
          method: "POST",
          body: BODY,
          headers: { "content-type": "application/json", ...(metered ? { "x-bench-metered": "1" } : {}) },
          client: t.client,
        });
        await res.text();
        if (res.status !== 200) throw new Error(`${v}: ${res.status}`);
      };
      for (let i = 0; i < 200; i++) await send(); // warm-up
      const lat: number[] = [];
      const s0 = await serverCpu();
      const c0 = cpuMs();
      for (let i = 0; i < n; i++) {
        const t0 = performance.now();
        await send();
        lat.push(performance.now() - t0);
      }
      const c1 = cpuMs();
      const s1 = await serverCpu();
      lat.sort((a, b) => a - b);
      const f = (x: number) => x.toFixed(3);
      console.log(
        `  ${v.padEnd(28)} p50 ${f(pct(lat, 50))} ms  p99 ${f(pct(lat, 99))} ms  ` +
          `server CPU ${f((s1 - s0) / n)} ms/req  client CPU ${f((c1 - c0) / n)} ms/req`,
      );
    }
  }
  for (const t of transports) t.client.close();
  await child.stdin.close();
  await child.status;
}

if (Deno.args.includes("--serve")) await serve();
else await main();
