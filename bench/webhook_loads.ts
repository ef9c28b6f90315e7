/**
 * The webhook benchmark's load generator (bench/webhook.ts): what a request is and when its answer is right, the
 * open and closed loops over HTTP/1.1, and the handler alone through `app.request()`.
 *
 * @module
 */
import { webhookApp } from "../webhooks/app.ts";
import { staticLookup } from "../webhooks/lookup.ts";
import { staticAccess } from "../webhooks/authorize.ts";
import { objects } from "./webhook_server.ts";

/** The most requests one loop sends. */
export const MAX_REQUESTS = 200_000;

/** The server's own handler timings since the last call. */
export async function serverStats(client: Deno.HttpClient, base: string) {
  const res = await fetch(`${base}/stats`, { method: "POST", client });
  return await res.json() as { count: number; p50: number; p99: number; max: number };
}

export interface Target {
  name: string;
  path: string;
  body: string;
  /** Checks one answer. */
  ok: (json: { response?: { allowed?: boolean }; ok?: boolean }) => boolean;
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

export const fmt = (ms: number) => `${ms.toFixed(2)} ms`;

export async function send(client: Deno.HttpClient, url: string, t: Target): Promise<void> {
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
export async function closedLoop(
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
export async function openLoop(client: Deno.HttpClient, url: string, t: Target, rate: number, seconds: number) {
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
export async function inProcess(t: Target, iterations: number) {
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
