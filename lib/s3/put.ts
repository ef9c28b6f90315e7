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

/** A PUT whose body is being written: {@link openPut}. */
export interface PutStream {
  /** Writes the next bytes of the body, straight from `bytes` (the connection's own pace). */
  write(bytes: Uint8Array): Promise<void>;
  /** After the last byte: the store's answer. */
  finish(): Promise<PutAnswer>;
  /** Drops the request: the store sees a body cut short, and stores nothing. */
  close(): void;
}

/** A write the store cut short: its answer, where it sent one before closing (such as a refusal). */
export class PutRefused extends Error {
  constructor(readonly answer: PutAnswer | undefined, options?: ErrorOptions) {
    super(answer ? `HTTP ${answer.status} before the body was sent` : "the connection closed while sending", options);
    this.name = "PutRefused";
  }
}

/**
 * Opens a PUT of a `length`-byte body to `url` with `headers` (already signed; `host` and `content-length` are
 * written here, from the URL and `length`); `stop` closes the connection (a deadline, the caller's signal).
 */
export async function openPut(
  url: URL,
  headers: Record<string, string>,
  length: number,
  o: { caPem?: string; stop: AbortSignal },
): Promise<PutStream> {
  o.stop.throwIfAborted();
  const hostname = url.hostname.replace(/^\[|\]$/g, "");
  const port = Number(url.port || (url.protocol === "https:" ? 443 : 80));
  const conn = url.protocol === "https:"
    ? await Deno.connectTls({ hostname, port, ...(o.caPem ? { caCerts: [o.caPem] } : {}) })
    : await Deno.connect({ hostname, port });
  const close = () => {
    o.stop.removeEventListener("abort", close);
    try {
      conn.close();
    } catch { /* closed already */ }
  };
  o.stop.addEventListener("abort", close, { once: true });
  const answer = async () => {
    try {
      return parse(await readAll(conn));
    } finally {
      close();
    }
  };
  const lines = [`PUT ${url.pathname}${url.search} HTTP/1.1`, `host: ${url.host}`];
  for (const [k, v] of Object.entries(headers)) {
    if (k !== "host" && k !== "content-length") lines.push(`${k}: ${v}`);
  }
  lines.push(`content-length: ${length}`, "connection: close", "", "");
  const write = async (bytes: Uint8Array) => {
    try {
      await writeAll(conn, bytes);
    } catch (err) {
      // A store may answer (a refusal) and close before reading the whole body: read what it said.
      o.stop.throwIfAborted();
      throw new PutRefused(await answer().catch(() => undefined), { cause: err });
    }
  };
  try {
    await write(enc.encode(lines.join("\r\n")));
  } catch (err) {
    close();
    throw err;
  }
  return {
    write,
    async finish() {
      const a = await answer().catch((err) => {
        o.stop.throwIfAborted();
        throw err;
      });
      if (!a) throw new PutRefused(undefined);
      return a;
    },
    close,
  };
}

/** PUTs `body` in one go (see {@link openPut}); a store that answers before taking it all is answered with that. */
export async function putBody(
  url: URL,
  headers: Record<string, string>,
  body: Uint8Array,
  o: { caPem?: string; stop: AbortSignal },
): Promise<PutAnswer> {
  const put = await openPut(url, headers, body.byteLength, o);
  try {
    await put.write(body);
  } catch (err) {
    if (err instanceof PutRefused && err.answer) return err.answer;
    throw err;
  }
  return await put.finish();
}

async function writeAll(conn: Deno.Conn, bytes: Uint8Array): Promise<void> {
  for (let at = 0; at < bytes.byteLength;) at += await conn.write(bytes.subarray(at));
}

/** The server's answer: until it closes, or its body is whole (a server may keep the connection open), at most 64 KiB. */
async function readAll(conn: Deno.Conn): Promise<Uint8Array> {
  let buf = new Uint8Array(4096); // a part's answer is a few hundred bytes: no 64 KiB of garbage per part
  let n = 0;
  while (!whole(buf.subarray(0, n))) {
    if (n === buf.byteLength) {
      if (n >= LIMIT) break;
      const bigger = new Uint8Array(Math.min(LIMIT, 2 * n));
      bigger.set(buf);
      buf = bigger;
    }
    const got = await conn.read(buf.subarray(n));
    if (got === null) break;
    n += got;
  }
  return buf.subarray(0, n);
}

/** Whether `raw` holds a whole answer: its head, then a body of its Content-Length or a chunked body's last chunk. */
function whole(raw: Uint8Array): boolean {
  const text = new TextDecoder().decode(raw);
  const end = text.indexOf("\r\n\r\n");
  if (end < 0) return false;
  const head = text.slice(0, end);
  const length = /\r\ncontent-length:\s*(\d+)/i.exec(head)?.[1];
  if (length !== undefined) return raw.byteLength - (end + 4) >= Number(length);
  if (/\r\ntransfer-encoding:[^\r]*chunked/i.test(head)) return /(^|\r\n)0\r\n\r\n$/.test(text.slice(end + 4));
  return false; // the body ends when the connection does
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
