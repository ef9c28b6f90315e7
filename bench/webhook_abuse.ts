/**
 * The abuse scenario of `bench/webhook.ts`: what someone other than the API
 * server can do to the webhook process, on loopback, bounded, stopping by
 * itself. For each attack: the server's RSS before, at its peak and a few
 * seconds after, and whether a normal admission (on a fresh connection, as
 * the API server would open one) still answers within 5 s meanwhile.
 *
 *   1. 20,000 POSTs to random paths (and the size of /metrics before/after);
 *   2. slowloris: connections sending headers, or a body, a little at a time;
 *   3. 20,000 connections opened and held (at most 512 at once on the client);
 *   4. 64 concurrent bodies of ~3 MB;
 *   5. never-reading clients: three pipelining ~2.8 MB reviews whose uid is
 *      as long (answers as large as requests, when the uid is echoed), then
 *      1,024 sockets each sending a request and never reading;
 *   6. trickled bodies: 50 connections sending a body one byte every 200 ms.
 *
 * Figures, not assertions.
 *
 * @module
 */

/** What the abuse run needs from the benchmark's server. */
export interface AbuseTarget {
  port: number;
  /** CA of the server's certificate. */
  ca: string;
  /** Process id of the server, for its RSS. */
  pid: number;
  /** A normal admission body and its path. */
  admission: { path: string; body: string };
}

const MiB = 1024 * 1024;

/** RSS of `pid` in MiB, from /proc. */
export function rssMiB(pid: number): number {
  const status = Deno.readTextFileSync(`/proc/${pid}/status`);
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? NaN);
  return kb / 1024;
}

/** Samples the RSS every 50 ms until stopped; answers the peak. */
function peakSampler(pid: number): { stop(): number } {
  let peak = rssMiB(pid);
  const timer = setInterval(() => {
    try {
      peak = Math.max(peak, rssMiB(pid));
    } catch { /* exited */ }
  }, 50);
  return {
    stop() {
      clearInterval(timer);
      return Math.max(peak, rssMiB(pid));
    },
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One admission on a fresh connection: how long it took, or why it failed (5 s limit). */
async function probe(t: AbuseTarget): Promise<string> {
  const client = Deno.createHttpClient({ caCerts: [t.ca], poolMaxIdlePerHost: 0 });
  const started = performance.now();
  try {
    const res = await fetch(`https://127.0.0.1:${t.port}${t.admission.path}`, {
      method: "POST",
      body: t.admission.body,
      headers: { "content-type": "application/json" },
      client,
      signal: AbortSignal.timeout(5_000),
    });
    const text = await res.text();
    const ms = performance.now() - started;
    return res.status === 200 && text.includes('"allowed"') ? `answered in ${ms.toFixed(0)} ms` : `HTTP ${res.status}`;
  } catch (err) {
    return `no answer (${(err as Error).name}) after ${(performance.now() - started).toFixed(0)} ms`;
  } finally {
    client.close();
  }
}

async function tls(t: AbuseTarget): Promise<Deno.TlsConn> {
  return await Deno.connectTls({ hostname: "127.0.0.1", port: t.port, caCerts: [t.ca] });
}

/** Resolves when the server closes `conn` (or it errors); answers when, in ms from `since`. */
async function closedBy(conn: Deno.Conn, since: number): Promise<number> {
  const buf = new Uint8Array(4096);
  try {
    while ((await conn.read(buf)) !== null) { /* drain */ }
  } catch { /* reset */ }
  return performance.now() - since;
}

async function measure(t: AbuseTarget, name: string, attack: (probeNow: () => void) => Promise<string>) {
  const before = rssMiB(t.pid);
  const sampler = peakSampler(t.pid);
  let during = "not probed";
  const probes: Promise<void>[] = [];
  const probeNow = () => probes.push(probe(t).then((r) => void (during = r)));
  const detail = await attack(probeNow);
  await Promise.all(probes);
  await sleep(5_000);
  const peak = sampler.stop();
  const after = rssMiB(t.pid);
  const afterProbe = await probe(t);
  console.log(`${name}`);
  console.log(`  ${detail}`);
  console.log(
    `  server RSS: before ${before.toFixed(0)} MiB, peak ${peak.toFixed(0)} MiB, 5 s after ${after.toFixed(0)} MiB`,
  );
  console.log(`  a normal admission during the attack: ${during}; after: ${afterProbe}`);
}

async function randomPaths(t: AbuseTarget, probeNow: () => void): Promise<string> {
  const client = Deno.createHttpClient({ caCerts: [t.ca] });
  const metricsSize = async () =>
    (await (await fetch(`https://127.0.0.1:${t.port}/bench/metrics`, { client })).text()).length;
  const sizeBefore = await metricsSize();
  let next = 0;
  const total = 20_000;
  await Promise.all(Array.from({ length: 64 }, async () => {
    while (next < total) {
      const i = next++;
      if (i === total / 2) probeNow();
      const res = await fetch(`https://127.0.0.1:${t.port}/${crypto.randomUUID()}/${i}`, {
        method: "POST",
        body: "{}",
        client,
      });
      await res.body?.cancel();
    }
  }));
  const sizeAfter = await metricsSize();
  client.close();
  return `${total} POSTs to random paths: /metrics ${sizeBefore} bytes before, ${sizeAfter} bytes after`;
}

async function slowloris(t: AbuseTarget, probeNow: () => void): Promise<string> {
  const since = performance.now();
  const conns: Deno.TlsConn[] = [];
  const closes: Promise<number>[] = [];
  const enc = new TextEncoder();
  for (let i = 0; i < 300; i++) {
    const c = await tls(t).catch(() => undefined);
    if (!c) continue;
    conns.push(c);
    closes.push(closedBy(c, since));
    const head = i % 2 === 0
      ? "POST /validate-kubernetescluster HTTP/1.1\r\nHost: x\r\n"
      : "POST /validate-kubernetescluster HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n{";
    await c.write(enc.encode(head)).catch(() => {});
  }
  const drip = setInterval(() => {
    conns.forEach((c, i) => c.write(enc.encode(i % 2 === 0 ? "X-Slow: 1\r\n" : " ")).catch(() => {}));
  }, 1_000);
  await sleep(3_000);
  probeNow();
  const limit = sleep(30_000).then(() => -1);
  const times = await Promise.all(closes.map((p) => Promise.race([p, limit])));
  clearInterval(drip);
  for (const c of conns) {
    try {
      c.close();
    } catch { /* closed */ }
  }
  const cut = times.filter((ms) => ms >= 0).sort((a, b) => a - b);
  const median = cut[Math.floor(cut.length / 2)] ?? NaN;
  return `${conns.length} connections dripping headers (half) or a body (half), one piece a second: ` +
    `${cut.length} closed by the server within 30 s (median ${(median / 1000).toFixed(1)} s, ` +
    `last ${((cut.at(-1) ?? NaN) / 1000).toFixed(1)} s)`;
}

async function heldConnections(t: AbuseTarget, probeNow: () => void): Promise<string> {
  const total = 20_000;
  const maxOpen = 512;
  const since = performance.now();
  let opened = 0;
  let refused = 0;
  let closedByServer = 0;
  let open = 0;
  let peakOpen = 0;
  const live = new Set<Promise<void>>();
  for (let i = 0; i < total; i++) {
    while (open >= maxOpen) await Promise.race(live);
    if (i === total / 2) probeNow();
    open++;
    peakOpen = Math.max(peakOpen, open);
    const p: Promise<void> = (async () => {
      try {
        const c = await tls(t);
        opened++;
        // Held until the server closes it, or 2 s at most (then the next one takes its place).
        const closed = await Promise.race([closedBy(c, since).then(() => true), sleep(2_000).then(() => false)]);
        if (closed) closedByServer++;
        try {
          c.close();
        } catch { /* closed */ }
      } catch {
        refused++;
      }
    })().finally(() => {
      open--;
      live.delete(p);
    });
    live.add(p);
  }
  await Promise.all(live);
  return `${total} TLS connections, up to ${peakOpen} held at once by the client: ${opened} completed the handshake ` +
    `(${closedByServer} of them closed by the server within 2 s), ${refused} refused, in ` +
    `${((performance.now() - since) / 1000).toFixed(1)} s`;
}

async function largeBodies(t: AbuseTarget, probeNow: () => void): Promise<string> {
  const size = 3_000_000;
  const body = `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","pad":"${"x".repeat(size - 80)}"}`;
  const statuses = new Map<string, number>();
  const client = Deno.createHttpClient({ caCerts: [t.ca], poolMaxIdlePerHost: 0 });
  const requests = Array.from({ length: 64 }, async () => {
    try {
      const res = await fetch(`https://127.0.0.1:${t.port}/validate-kubernetescluster`, {
        method: "POST",
        body,
        headers: { "content-type": "application/json" },
        client,
      });
      await res.body?.cancel();
      statuses.set(String(res.status), (statuses.get(String(res.status)) ?? 0) + 1);
    } catch (err) {
      const k = (err as Error).name;
      statuses.set(k, (statuses.get(k) ?? 0) + 1);
    }
  });
  await sleep(50);
  probeNow();
  await Promise.all(requests);
  client.close();
  const summary = [...statuses].map(([k, n]) => `${n}× ${k}`).join(", ");
  return `64 concurrent bodies of ${(size / MiB).toFixed(1)} MiB: ${summary}`;
}

function closeAll(conns: Deno.Conn[]): void {
  for (const c of conns) {
    try {
      c.close();
    } catch { /* closed */ }
  }
}

/** A POST of `body` to the validating path, as bytes. */
function post(t: AbuseTarget, body: string): Uint8Array {
  const enc = new TextEncoder();
  const b = enc.encode(body);
  const head = enc.encode(`POST ${t.admission.path} HTTP/1.1\r\nHost: x\r\nContent-Length: ${b.length}\r\n\r\n`);
  const out = new Uint8Array(head.length + b.length);
  out.set(head);
  out.set(b, head.length);
  return out;
}

async function neverReading(t: AbuseTarget, probeNow: () => void): Promise<string> {
  // Three bodies that together leave less of an 8 MiB budget than a normal review needs.
  const size = Math.floor((8 * MiB - 100) / 3);
  const shell = (uid: string) => t.admission.body.replace(/"uid":"[^"]*"/, `"uid":"${uid}"`);
  const big = post(t, shell("u".repeat(size - shell("").length)));
  const three: Deno.TlsConn[] = [];
  for (let i = 0; i < 3; i++) {
    const c = await tls(t);
    three.push(c);
    void (async () => {
      for (let k = 0; k < 3; k++) await c.write(big);
    })().catch(() => {});
  }
  await sleep(2_000);
  const during: string[] = [];
  for (let i = 0; i < 5; i++) {
    during.push(await probe(t));
    await sleep(500);
  }
  const held: Deno.Conn[] = [];
  const small = post(t, t.admission.body);
  for (let i = 0; i < 1_024; i += 128) {
    const batch = await Promise.allSettled(Array.from({ length: 128 }, () => tls(t)));
    for (const r of batch) {
      if (r.status !== "fulfilled") continue;
      held.push(r.value);
      r.value.write(small).catch(() => {});
    }
  }
  probeNow();
  await sleep(3_000);
  closeAll(three);
  closeAll(held);
  return `3 clients pipelining ${(size / MiB).toFixed(2)} MiB reviews, never reading: admissions ${
    during.join(", ")
  }; ` +
    `then ${held.length} never-reading TLS connections held`;
}

async function trickle(t: AbuseTarget, probeNow: () => void): Promise<string> {
  const since = performance.now();
  const conns: Deno.TlsConn[] = [];
  const enc = new TextEncoder();
  for (let i = 0; i < 50; i++) {
    const c = await tls(t);
    conns.push(c);
    await c.write(enc.encode(`POST ${t.admission.path} HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n{`));
  }
  const closes = conns.map((c) => closedBy(c, since));
  const drip = setInterval(() => conns.forEach((c) => c.write(enc.encode(" ")).catch(() => {})), 200);
  await sleep(2_000);
  probeNow();
  const limit = sleep(40_000).then(() => -1);
  const times = await Promise.all(closes.map((p) => Promise.race([p, limit])));
  clearInterval(drip);
  closeAll(conns);
  const cut = times.filter((ms) => ms >= 0).sort((a, b) => a - b);
  return `50 bodies trickled one byte every 200 ms: ${cut.length} cut off within 40 s ` +
    `(first ${((cut[0] ?? NaN) / 1000).toFixed(1)} s, last ${((cut.at(-1) ?? NaN) / 1000).toFixed(1)} s)`;
}

/** Runs the attacks (all, or those numbered in `only`) one after the other and prints the figures. */
export async function runAbuse(t: AbuseTarget, only?: number[]): Promise<void> {
  console.log("\nabuse (each: RSS before / peak / 5 s after; a normal admission during and after)");
  const attacks: [string, (p: () => void) => Promise<string>][] = [
    ["random paths", (p) => randomPaths(t, p)],
    ["slowloris", (p) => slowloris(t, p)],
    ["held connections", (p) => heldConnections(t, p)],
    ["large bodies", (p) => largeBodies(t, p)],
    ["never-reading clients", (p) => neverReading(t, p)],
    ["trickled bodies", (p) => trickle(t, p)],
  ];
  for (const [i, [name, attack]] of attacks.entries()) {
    if (!only || only.includes(i + 1)) await measure(t, `${i + 1}. ${name}`, attack);
  }
}
