/** The probes and metrics server: answers, times out silent clients, caps connections, stops on abort. */
import assert from "node:assert/strict";
import { serveHttp } from "../../lib/http/server.ts";
import { eventually } from "../../testing/helpers.ts";

const handler = (req: Request) => new Response(`path ${new URL(req.url).pathname}\n`);

async function get(port: number, path: string): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`);
  return await res.text();
}

/** Closes `conns`; some the server has closed already. */
function closeAll(...conns: Deno.Conn[]): void {
  for (const c of conns) {
    try {
      c.close();
    } catch { /* closed by the server */ }
  }
}

/** Resolves to true when the peer closes `conn` within `ms`. */
async function closedWithin(conn: Deno.Conn, ms: number): Promise<boolean> {
  const buf = new Uint8Array(64);
  const read = conn.read(buf).then((n) => n === null, () => true);
  const late = new Promise<false>((r) => setTimeout(() => r(false), ms));
  return await Promise.race([read, late]);
}

Deno.test("the plain server answers GET requests with http:// URLs", async () => {
  const ac = new AbortController();
  const s = await serveHttp({ hostname: "127.0.0.1", port: 0, fetch: handler, signal: ac.signal });
  try {
    assert.equal(await get(s.port, "/healthz"), "path /healthz\n");
  } finally {
    ac.abort();
    await s.finished;
  }
});

Deno.test("the plain server closes a connection that sends no request head within the deadline", async () => {
  const ac = new AbortController();
  const s = await serveHttp({
    hostname: "127.0.0.1",
    port: 0,
    fetch: handler,
    signal: ac.signal,
    headerTimeoutMs: 300,
  });
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: s.port });
  try {
    await conn.write(new TextEncoder().encode("GET /healthz HTTP/1.1\r\nHost: x\r\n")); // never finished
    assert.equal(await closedWithin(conn, 5_000), true, "a half-sent head must not hold the connection");
  } finally {
    closeAll(conn);
    ac.abort();
    await s.finished;
  }
});

Deno.test("the plain server keeps at most maxConnections open and still answers a new client", async () => {
  const ac = new AbortController();
  const s = await serveHttp({ hostname: "127.0.0.1", port: 0, fetch: handler, signal: ac.signal, maxConnections: 4 });
  const held: Deno.Conn[] = [];
  try {
    for (let i = 0; i < 12; i++) held.push(await Deno.connect({ hostname: "127.0.0.1", port: s.port }));
    await eventually("the server to keep at most 4 connections", () => s.connections() <= 4, 5_000, 20);
    assert.equal(await get(s.port, "/readyz"), "path /readyz\n", "held sockets must not starve a probe");
    assert.ok(await closedWithin(held[0]!, 2_000), "the oldest idle connection was closed");
  } finally {
    closeAll(...held);
    ac.abort();
    await s.finished;
  }
});

Deno.test("the plain server stops on abort: the port no longer accepts", async () => {
  // An address of its own: on 127.0.0.1 another process of a busy machine may take the freed port at once.
  const hostname = "127.0.169.9";
  const ac = new AbortController();
  const s = await serveHttp({ hostname, port: 0, fetch: handler, signal: ac.signal });
  const res = await fetch(`http://${hostname}:${s.port}/metrics`);
  assert.equal(await res.text(), "path /metrics\n");
  ac.abort();
  await s.finished;
  await assert.rejects(Deno.connect({ hostname, port: s.port }));
});
