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
 * The server is bench/webhook_server.ts; the loops are bench/webhook_loads.ts.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { VALIDATE_PATH } from "../webhooks/paths.ts";
import { runAbuse } from "./webhook_abuse.ts";
import { closedLoop, fmt, inProcess, MAX_REQUESTS, openLoop, send, serverStats, type Target } from "./webhook_loads.ts";
import { review } from "./webhook_server.ts";

const MAX_SECONDS = 30;

/** The webhook server in a child process (bench/webhook_server.ts); answers once it listens, with its port and CA. */
async function startServer(server: string, v8Flags: string) {
  const config = new URL("../deno.json", import.meta.url).pathname;
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      `--config=${config}`,
      ...(v8Flags ? [`--v8-flags=${v8Flags}`] : []),
      new URL("./webhook_server.ts", import.meta.url).pathname,
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
