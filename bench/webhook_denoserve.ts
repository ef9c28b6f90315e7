/**
 * The alternative to NICO's own HTTP layer that issue 21 asked to measure
 * again, for `bench:webhook --server deno-serve` only: `Deno.serve` on a
 * private loopback TLS port behind a TCP front that owns the raw sockets.
 * The front gives what it can without reading HTTP: the handshake and first
 * bytes within the header timeout, then no more than the idle timeout
 * without a byte moving, a write towards the client that does not move
 * within the write timeout, and a connection cap that closes the oldest.
 * The handler refuses a body over the limit or over the in-flight budget
 * before reading it, and reads at most the limit of a chunked one.
 *
 * @module
 */
import { acceptLoop } from "../lib/http/front.ts";
import type { HttpLimits } from "../lib/http/policy.ts";

interface FrontLink {
  outer: Deno.Conn;
  inner?: Deno.Conn;
  timer?: ReturnType<typeof setTimeout>;
}

function closeQuietly(c: { close(): void } | undefined): void {
  try {
    c?.close();
  } catch { /* closed */ }
}

/** Reads `req`'s body, at most `max` bytes; undefined when it is larger or does not arrive within `ms`. */
async function readCapped(req: Request, max: number, ms: number): Promise<Uint8Array<ArrayBuffer> | undefined> {
  const reader = req.body?.getReader();
  if (!reader) return new Uint8Array(0);
  const chunks: Uint8Array[] = [];
  let size = 0;
  const deadline = setTimeout(() => reader.cancel().catch(() => {}), ms);
  try {
    for (let r = await reader.read(); !r.done; r = await reader.read()) {
      size += r.value.length;
      if (size > max) return undefined;
      chunks.push(r.value);
    }
  } catch {
    return undefined;
  } finally {
    clearTimeout(deadline);
  }
  const out = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) out.set(c, (at += c.length) - c.length);
  return out;
}

/** Starts `Deno.serve` behind the front; answers its port and a stop. */
export function serveDenoBehindFront(o: {
  fetch: (req: Request) => Response | Promise<Response>;
  pair: { certPem: string; keyPem: string };
  limits: HttpLimits;
}): { port: number; stop(): Promise<void> } {
  const lim = o.limits;
  let inflight = 0;
  const inner = Deno.serve({
    hostname: "127.0.0.1",
    port: 0,
    cert: o.pair.certPem,
    key: o.pair.keyPem,
    onListen: () => {},
  }, async (req) => {
    const declared = Number(req.headers.get("content-length") ?? lim.maxBodyBytes);
    if (!(declared <= lim.maxBodyBytes)) return new Response("too large\n", { status: 413 });
    if (inflight + declared > lim.maxInflightBytes) return new Response("busy\n", { status: 503 });
    inflight += declared;
    try {
      const body = await readCapped(req, lim.maxBodyBytes, lim.bodyTimeoutMs);
      if (!body) return new Response("too large or too slow\n", { status: 413 });
      const hasBody = req.method !== "GET" && req.method !== "HEAD";
      return await o.fetch(
        new Request(req.url, { method: req.method, headers: req.headers, ...(hasBody ? { body } : {}) }),
      );
    } finally {
      inflight -= declared;
    }
  });
  const innerPort = inner.addr.port;
  const links = new Set<FrontLink>();
  const drop = (l: FrontLink) => {
    clearTimeout(l.timer);
    closeQuietly(l.inner);
    closeQuietly(l.outer);
    links.delete(l);
  };
  const arm = (l: FrontLink, ms: number) => {
    clearTimeout(l.timer);
    l.timer = setTimeout(() => drop(l), ms);
  };
  const pump = async (l: FrontLink, from: Deno.Conn, to: Deno.Conn, towardsClient: boolean) => {
    const buf = new Uint8Array(16 * 1024);
    try {
      for (let n = await from.read(buf); n !== null; n = await from.read(buf)) {
        arm(l, towardsClient ? lim.writeTimeoutMs : lim.idleTimeoutMs);
        for (let at = 0; at < n;) at += await to.write(buf.subarray(at, n));
        arm(l, lim.idleTimeoutMs);
      }
    } finally {
      drop(l);
    }
  };
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  let stopping = false;
  const loop = acceptLoop(listener, (outer) => {
    if (links.size >= lim.maxConnections) drop(links.values().next().value!); // the oldest makes room
    const l: FrontLink = { outer };
    links.add(l);
    arm(l, lim.headerTimeoutMs);
    void (async () => {
      try {
        l.inner = await Deno.connect({ hostname: "127.0.0.1", port: innerPort });
        await Promise.allSettled([pump(l, outer, l.inner, false), pump(l, l.inner, outer, true)]);
      } catch {
        drop(l);
      }
    })();
  }, () => stopping);
  return {
    port: (listener.addr as Deno.NetAddr).port,
    async stop() {
      stopping = true;
      closeQuietly(listener);
      await loop.done;
      for (const l of [...links]) drop(l);
      await inner.shutdown();
    },
  };
}
