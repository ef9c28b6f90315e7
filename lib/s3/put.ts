/**
 * One PUT with a body, sent over a connection of its own (HTTP/1.1,
 * `Connection: close`) and written straight from the caller's buffer.
 *
 * Why not `fetch`: it copies a `Uint8Array` body into a new buffer (the
 * request may not see later changes), so every 8 MiB part left 8 MiB of
 * garbage outside V8's heap that only a collection frees, and V8 collects
 * for its own heap, not for those buffers: uploading 128 MiB grew the
 * process by 84 MiB (a `Blob` body, 125 MiB; a stream body loses its
 * Content-Length, which S3 needs for a part). Written from a buffer that is
 * reused, a part costs nothing more than the buffer.
 *
 * @module
 */

/** An answer: the status, its headers and its body as text (at most 64 KiB is read). */
export interface PutAnswer {
  status: number;
  headers: Headers;
  text: string;
}

const LIMIT = 64 * 1024;
const enc = new TextEncoder();

/**
 * PUTs `body` to `url` with `headers` (already signed, `host` and `content-length` left to this function, which
 * sends the URL's and the body's); `stop` closes the connection (a deadline, the caller's signal).
 */
export async function putBody(
  url: URL,
  headers: Record<string, string>,
  body: Uint8Array,
  o: { caPem?: string; stop: AbortSignal },
): Promise<PutAnswer> {
  o.stop.throwIfAborted();
  const hostname = url.hostname.replace(/^\[|\]$/g, "");
  const port = Number(url.port || (url.protocol === "https:" ? 443 : 80));
  const conn = url.protocol === "https:"
    ? await Deno.connectTls({ hostname, port, ...(o.caPem ? { caCerts: [o.caPem] } : {}) })
    : await Deno.connect({ hostname, port });
  const close = () => {
    try {
      conn.close();
    } catch { /* closed already */ }
  };
  o.stop.addEventListener("abort", close, { once: true });
  try {
    const lines = [`PUT ${url.pathname}${url.search} HTTP/1.1`, `host: ${url.host}`];
    for (const [k, v] of Object.entries(headers)) {
      if (k !== "host" && k !== "content-length") lines.push(`${k}: ${v}`);
    }
    lines.push(`content-length: ${body.byteLength}`, "connection: close", "", "");
    let writeError: unknown;
    try {
      await writeAll(conn, enc.encode(lines.join("\r\n")));
      await writeAll(conn, body);
    } catch (err) {
      writeError = err; // a store may answer (a refusal) and close before reading the body: read its answer
    }
    const raw = await readAll(conn).catch((err) => {
      throw writeError ?? err;
    });
    const answer = parse(raw);
    if (!answer) throw writeError ?? new Error("the connection closed without an HTTP answer");
    return answer;
  } catch (err) {
    o.stop.throwIfAborted();
    throw err;
  } finally {
    o.stop.removeEventListener("abort", close);
    close();
  }
}

async function writeAll(conn: Deno.Conn, bytes: Uint8Array): Promise<void> {
  for (let at = 0; at < bytes.byteLength;) at += await conn.write(bytes.subarray(at));
}

/** Everything the server sends until it closes (at most {@link LIMIT} bytes). */
async function readAll(conn: Deno.Conn): Promise<Uint8Array> {
  const buf = new Uint8Array(LIMIT);
  let n = 0;
  while (n < LIMIT) {
    const got = await conn.read(buf.subarray(n));
    if (got === null) break;
    n += got;
  }
  return buf.subarray(0, n);
}

/** An HTTP/1.1 answer's status, headers and body (chunked or not); undefined when there is no whole head. */
function parse(raw: Uint8Array): PutAnswer | undefined {
  const text = new TextDecoder().decode(raw);
  const end = text.indexOf("\r\n\r\n");
  if (end < 0) return undefined;
  const [statusLine, ...lines] = text.slice(0, end).split("\r\n");
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine ?? "")?.[1]);
  if (!status) return undefined;
  const headers = new Headers();
  for (const l of lines) {
    const i = l.indexOf(":");
    if (i > 0) headers.append(l.slice(0, i).trim(), l.slice(i + 1).trim());
  }
  let body = text.slice(end + 4);
  if (/chunked/i.test(headers.get("transfer-encoding") ?? "")) {
    let out = "";
    for (let at = 0; at < body.length;) {
      const nl = body.indexOf("\r\n", at);
      const size = parseInt(body.slice(at, nl < 0 ? undefined : nl), 16);
      if (!(size > 0) || nl < 0) break;
      out += body.slice(nl + 2, nl + 2 + size);
      at = nl + 2 + size + 2;
    }
    body = out;
  }
  return { status, headers, text: body };
}
