/**
 * Loopback proxies that fail on purpose, for the backup tests: one that cuts
 * a TCP stream after so many bytes (an etcd member's snapshot broken midway,
 * TLS passing through untouched), and one that answers chosen HTTP requests
 * with a 500 instead of passing them to the store (a store failing midway
 * through a multipart upload). Both listen on a free port of a loopback
 * address, and `close()` ends them and their connections.
 *
 * @module
 */

export interface Proxy {
  host: string;
  port: number;
  /** Requests (HTTP proxy) or connections (TCP proxy) seen so far. */
  seen: number;
  close(): Promise<void>;
}

interface Target {
  host: string;
  port: number;
}

/** Tracks the proxy's connections, so close() ends them all. */
function tracker() {
  const conns = new Set<Deno.Conn>();
  const tasks = new Set<Promise<void>>();
  return {
    add(c: Deno.Conn) {
      conns.add(c);
    },
    run(p: Promise<void>) {
      const t = p.catch(() => {}).finally(() => tasks.delete(t));
      tasks.add(t);
    },
    async close(listener: Deno.Listener) {
      listener.close();
      for (const c of conns) {
        try {
          c.close();
        } catch { /* closed already */ }
      }
      await Promise.all(tasks);
    },
  };
}

const closeQuietly = (c: Deno.Conn) => {
  try {
    c.close();
  } catch { /* closed already */ }
};

/** Passes TCP both ways to `target`; once `afterBytes` came back from it on one connection, cuts that connection. */
export function cuttingProxy(host: string, target: Target, afterBytes: number): Proxy {
  const listener = Deno.listen({ hostname: host, port: 0 });
  const t = tracker();
  const proxy: Proxy = { host, port: (listener.addr as Deno.NetAddr).port, seen: 0, close: () => t.close(listener) };
  t.run((async () => {
    for await (const client of listener) {
      proxy.seen++;
      t.add(client);
      t.run((async () => {
        const upstream = await Deno.connect({ hostname: target.host, port: target.port });
        t.add(upstream);
        const up = client.readable.pipeTo(upstream.writable).catch(() => {});
        let sent = 0;
        const down = upstream.readable.pipeTo(
          new WritableStream({
            async write(chunk) {
              const room = afterBytes - sent;
              const part = chunk.subarray(0, Math.max(0, room));
              sent += part.byteLength;
              if (part.byteLength) await writeAll(client, part);
              if (sent >= afterBytes) throw new Error("cut");
            },
          }),
        ).catch(() => {});
        await down;
        closeQuietly(client);
        closeQuietly(upstream);
        await up;
      })());
    }
  })());
  return proxy;
}

async function writeAll(c: Deno.Conn, bytes: Uint8Array) {
  for (let at = 0; at < bytes.byteLength;) at += await c.write(bytes.subarray(at));
}

/** The head of an HTTP request: its request line and headers, lower-case names. */
export interface RequestHead {
  method: string;
  /** Path and query, as sent. */
  target: string;
  headers: Record<string, string>;
}

const enc = new TextEncoder();
const dec = new TextDecoder();

/**
 * An HTTP/1.1 proxy to `target` (plain HTTP) that answers a request `fail` picks with a 500 and S3's `InternalError`
 * (after reading its body) instead of passing it on. One request per connection (each answer says
 * `Connection: close`); request bodies need a Content-Length, as the S3 client sends them. The request goes to the
 * store byte for byte, its Host header included, so signatures still match.
 */
export function failingHttpProxy(host: string, target: Target, fail: (r: RequestHead) => boolean): Proxy {
  const listener = Deno.listen({ hostname: host, port: 0 });
  const t = tracker();
  const proxy: Proxy = { host, port: (listener.addr as Deno.NetAddr).port, seen: 0, close: () => t.close(listener) };
  t.run((async () => {
    for await (const client of listener) {
      t.add(client);
      t.run(serveOne(client, target, fail, t, () => proxy.seen++).finally(() => closeQuietly(client)));
    }
  })());
  return proxy;
}

async function serveOne(
  client: Deno.Conn,
  target: Target,
  fail: (r: RequestHead) => boolean,
  t: ReturnType<typeof tracker>,
  count: () => void,
): Promise<void> {
  const reader = client.readable.getReader();
  let buf: Uint8Array = new Uint8Array(0);
  let end = -1;
  while ((end = indexOfHeadEnd(buf)) < 0) {
    const { done, value } = await reader.read();
    if (done) return;
    buf = concat(buf, value);
  }
  count();
  const headText = dec.decode(buf.subarray(0, end));
  const [line, ...lines] = headText.split("\r\n");
  const [method = "", path = ""] = line!.split(" ");
  const headers: Record<string, string> = {};
  for (const l of lines) {
    const i = l.indexOf(":");
    if (i > 0) headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
  }
  const length = Number(headers["content-length"] ?? "0");
  const parts = [buf.subarray(end + 4)];
  for (let got = parts[0]!.byteLength; got < length;) {
    const { done, value } = await reader.read();
    if (done) return;
    parts.push(value);
    got += value.byteLength;
  }
  const body = parts.reduce(concat, new Uint8Array(0));
  if (fail({ method, target: path, headers })) {
    const xml = "<Error><Code>InternalError</Code><Message>failing on purpose</Message></Error>";
    const head =
      `HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/xml\r\nContent-Length: ${xml.length}` +
      `\r\nConnection: close\r\n\r\n`;
    await writeAll(client, enc.encode(head + xml));
    return;
  }
  const kept = lines.filter((l) => !/^connection:/i.test(l));
  const upstream = await Deno.connect({ hostname: target.host, port: target.port });
  t.add(upstream);
  try {
    await writeAll(upstream, enc.encode([line, ...kept, "Connection: close", "", ""].join("\r\n")));
    await writeAll(upstream, body.subarray(0, length));
    await relayAnswer(upstream, client);
  } finally {
    closeQuietly(upstream);
  }
}

/** Passes the store's answer on with `Connection: close` in its head (so the client does not reuse the connection). */
async function relayAnswer(upstream: Deno.Conn, client: Deno.Conn) {
  const reader = upstream.readable.getReader();
  let buf: Uint8Array = new Uint8Array(0);
  let end = -1;
  while ((end = indexOfHeadEnd(buf)) < 0) {
    const { done, value } = await reader.read();
    if (done) return;
    buf = concat(buf, value);
  }
  const head = dec.decode(buf.subarray(0, end)).split("\r\n").filter((l) => !/^connection:/i.test(l));
  await writeAll(client, enc.encode([...head, "Connection: close", "", ""].join("\r\n")));
  await writeAll(client, buf.subarray(end + 4));
  while (true) {
    const { done, value } = await reader.read();
    if (done) return;
    await writeAll(client, value);
  }
}

function indexOfHeadEnd(b: Uint8Array): number {
  for (let i = 0; i + 3 < b.byteLength; i++) {
    if (b[i] === 13 && b[i + 1] === 10 && b[i + 2] === 13 && b[i + 3] === 10) return i;
  }
  return -1;
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.byteLength + b.byteLength);
  out.set(a);
  out.set(b, a.byteLength);
  return out;
}
