/**
 * The webhook and plain servers under the attacks of issue 21, on loopback:
 * clients that pipeline large reviews and never read the answers (three, and
 * 1,024 held sockets), IPv6 listen addresses, and an accept loop that meets
 * errors. In each, a normal admission on a fresh connection must answer
 * within its timeout while the attack goes on.
 */
import assert from "node:assert/strict";
import { eventually } from "../../testing/helpers.ts";
import { createCa, issueCert } from "../../lib/pki.ts";
import { serveHttp } from "../../lib/http/server.ts";
import { denoTls } from "../../lib/http/tls.ts";
import { webhookApp } from "../../webhooks/app.ts";
import { staticAccess } from "../../webhooks/authorize.ts";
import { staticLookup } from "../../webhooks/lookup.ts";
import { VALIDATE_PATH } from "../../webhooks/paths.ts";
import { startWebhookServer } from "../../webhooks/server.ts";
import { listenOn } from "../../cli/options.ts";
import { SMUGGLING } from "../unit/http_corpus.ts";

const ca = await createCa({ commonName: "attack-test-ca" });
const serving = await issueCert(ca, {
  commonName: "127.0.0.1",
  ipAddresses: ["127.0.0.1", "::1"],
  usage: "server",
  days: 1,
});
const enc = new TextEncoder();
const app = () => webhookApp({ lookup: staticLookup({}), access: staticAccess([]) });

function review(uid = "u-1", pad = 0): string {
  return JSON.stringify({
    apiVersion: "admission.k8s.io/v1",
    kind: "AdmissionReview",
    request: {
      uid,
      kind: { group: "nico.homystack.com", version: "v1alpha1", kind: "KubernetesCluster" },
      operation: "DELETE",
      namespace: "ns",
      name: "c",
      userInfo: { username: "admin" },
      ...(pad ? { pad: "p".repeat(pad) } : {}),
    },
  });
}

function post(body: string, close = false): Uint8Array {
  const bytes = enc.encode(body);
  const head = `POST ${VALIDATE_PATH} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n` +
    `Content-Length: ${bytes.length}\r\n${close ? "Connection: close\r\n" : ""}\r\n`;
  const out = new Uint8Array(enc.encode(head).length + bytes.length);
  out.set(enc.encode(head));
  out.set(bytes, out.length - bytes.length);
  return out;
}

/** A normal admission on a fresh connection, as the API server sends it: its status, or why it failed (5 s). */
async function admission(host: string, port: number): Promise<string> {
  const client = Deno.createHttpClient({ caCerts: [ca.certPem], poolMaxIdlePerHost: 0 });
  try {
    const res = await fetch(`https://${host.includes(":") ? `[${host}]` : host}:${port}${VALIDATE_PATH}`, {
      method: "POST",
      body: review(),
      headers: { "content-type": "application/json" },
      client,
      signal: AbortSignal.timeout(5_000),
    });
    const text = await res.text();
    return res.status === 200 && text.includes('"allowed":true') ? "200" : `${res.status} ${text.slice(0, 80)}`;
  } catch (err) {
    return `no answer: ${(err as Error).name}`;
  } finally {
    client.close();
  }
}

/** Opens a TLS connection that writes `requests` back to back and never reads an answer. */
async function neverReading(port: number, requests: Uint8Array[]): Promise<Deno.TlsConn> {
  const conn = await Deno.connectTls({ hostname: "127.0.0.1", port, caCerts: [ca.certPem] });
  void (async () => {
    for (const r of requests) await conn.write(r);
  })().catch(() => {});
  return conn;
}

function closeAll(conns: Deno.Conn[]): void {
  for (const c of conns) {
    try {
      c.close();
    } catch { /* closed by the server */ }
  }
}

/** Admissions every 300 ms for `ms`: each must answer 200. */
async function admissionsFor(host: string, port: number, ms: number): Promise<string[]> {
  const out: string[] = [];
  const until = performance.now() + ms;
  while (performance.now() < until) {
    out.push(await admission(host, port));
    await new Promise((r) => setTimeout(r, 300)); // pacing: one admission every 300 ms while the attack lasts
  }
  return out;
}

Deno.test("three clients pipelining 2.8 MB reviews with 2.8 MB uids and never reading cannot stop admission", async () => {
  const server = await startWebhookServer({ app: app(), hostname: "127.0.0.1", port: 0, tls: serving });
  // Three bodies that together leave less of the 8 MiB budget than a normal review needs.
  const size = Math.floor((8 * 1024 * 1024 - 100) / 3);
  const big = post(review("u".repeat(size - review("").length)));
  assert.equal(new TextEncoder().encode(review("u".repeat(size - review("").length))).length, size);
  const attackers = await Promise.all([0, 1, 2].map(() => neverReading(server.port, [big, big, big])));
  try {
    await new Promise((r) => setTimeout(r, 1_500)); // pacing: the attack runs a while before admissions are tried
    const answers = await admissionsFor("127.0.0.1", server.port, 3_000);
    assert.ok(answers.length >= 3);
    assert.deepEqual(answers.filter((a) => a !== "200"), [], "a normal admission failed during the attack");
  } finally {
    closeAll(attackers);
    await server.stop();
  }
});

Deno.test("answers as large as their requests, never read: the writers are pushed out, a small request passes", async () => {
  const echo = async (req: Request) => new Response(await req.arrayBuffer());
  const server = await serveHttp({
    hostname: "127.0.0.1",
    port: 0,
    fetch: echo,
    tls: denoTls(serving),
    maxBodyBytes: 3 * 1024 * 1024,
    maxInflightBytes: 8 * 1024 * 1024,
    writeTimeoutMs: 60_000,
  });
  const big = post("x".repeat(2_800_000));
  const attackers = await Promise.all([0, 1, 2].map(() => neverReading(server.port, [big, big, big])));
  try {
    await eventually("the attack to hold most of the budget", () => server.held() > 4 * 1024 * 1024, 10_000, 50);
    const client = Deno.createHttpClient({ caCerts: [ca.certPem], poolMaxIdlePerHost: 0 });
    const res = await fetch(`https://127.0.0.1:${server.port}/small`, {
      method: "POST",
      body: "ok",
      client,
      signal: AbortSignal.timeout(5_000),
    });
    assert.equal(`${res.status} ${await res.text()}`, "200 ok");
    client.close();
  } finally {
    closeAll(attackers);
    await server.stop();
  }
});

Deno.test("1,024 held sockets (twice the connection cap) cannot keep a normal admission out", async () => {
  const server = await startWebhookServer({ app: app(), hostname: "127.0.0.1", port: 0, tls: serving });
  const held: Deno.Conn[] = [];
  try {
    for (let i = 0; i < 1_024; i += 64) {
      held.push(
        ...await Promise.all(
          Array.from({ length: 64 }, () => Deno.connect({ hostname: "127.0.0.1", port: server.port })),
        ),
      );
    }
    const answers = await admissionsFor("127.0.0.1", server.port, 1_500);
    assert.deepEqual(answers.filter((a) => a !== "200"), [], "a normal admission failed during the attack");
    assert.ok(server.connections() <= 1_024, `${server.connections()} connections open`);
  } finally {
    closeAll(held);
    await server.stop();
  }
});

Deno.test("IPv6: the webhook and the plain server listen on ::1 and answer", async () => {
  // As `--webhook-addr [::1]:0` and `--health-addr [::1]:0` are read.
  const webhook = await startWebhookServer({ app: app(), ...listenOn("[::1]:0"), tls: serving });
  const plain = await serveHttp({ ...listenOn("[::1]:0"), fetch: (req) => new Response(req.url) });
  try {
    assert.equal(await admission("::1", webhook.port), "200");
    const res = await fetch(`http://[::1]:${plain.port}/readyz`);
    assert.equal(await res.text(), `http://[::1]:${plain.port}/readyz`);
  } finally {
    await webhook.stop();
    await plain.stop();
  }
});

Deno.test("accept errors (EMFILE) do not end the accept loop; healthy() is false while they last", async () => {
  let failures = 0;
  let reported = 0;
  const server = await serveHttp({
    hostname: "127.0.0.1",
    port: 0,
    fetch: () => new Response("ok"),
    onAcceptError: () => reported++,
    listen: (o) => {
      const real = Deno.listen(o);
      const accept = real.accept.bind(real);
      real.accept = async () => {
        const conn = await accept();
        if (failures++ < 3) {
          conn.close();
          throw new Error("Too many open files (os error 24)");
        }
        return conn;
      };
      return real;
    },
  });
  try {
    let seenUnhealthy = false;
    const answers: string[] = [];
    for (let i = 0; i < 20 && answers.filter((a) => a === "ok").length < 2; i++) {
      const client = Deno.createHttpClient({ poolMaxIdlePerHost: 0 });
      const url = `http://127.0.0.1:${server.port}/b`;
      const got = await fetch(url, { client, signal: AbortSignal.timeout(5_000) }).then(
        (r) => r.text(),
        () => "failed",
      );
      client.close();
      answers.push(got);
      if (got === "failed") seenUnhealthy ||= !server.healthy();
    }
    assert.deepEqual(answers, ["failed", "failed", "failed", "ok", "ok"]);
    assert.ok(seenUnhealthy, "healthy() stayed true while accepting failed");
    assert.ok(server.healthy(), "healthy() did not come back");
    assert.equal(reported, 1, "each streak of errors is reported once");
  } finally {
    await server.stop();
  }
});

/** Reads `conn` until the server closes it or `ms` pass: the text, and whether the server closed it. */
async function answerOf(conn: Deno.Conn, ms: number): Promise<{ text: string; closed: boolean }> {
  const buf = new Uint8Array(16 * 1024);
  let text = "";
  const timer = setTimeout(() => closeAll([conn]), ms);
  try {
    for (let n = await conn.read(buf); n !== null; n = await conn.read(buf)) {
      text += new TextDecoder().decode(buf.subarray(0, n));
    }
    return { text, closed: true };
  } catch {
    return { text, closed: false };
  } finally {
    clearTimeout(timer);
    closeAll([conn]);
  }
}

Deno.test("over TLS, during trickled bodies and the smuggling corpus, admission answers and nothing is smuggled", async () => {
  const seen: string[] = [];
  const server = await startWebhookServer({
    app: { fetch: (req) => (seen.push(new URL(req.url).pathname), app().fetch(req)) },
    hostname: "127.0.0.1",
    port: 0,
    tls: serving,
    bodyTimeoutMs: 1_500,
  });
  const open = () => Deno.connectTls({ hostname: "127.0.0.1", port: server.port, caCerts: [ca.certPem] });
  const trickled = await Promise.all(Array.from({ length: 20 }, open));
  try {
    const cut = trickled.map((c) => answerOf(c, 10_000));
    for (const c of trickled) await c.write(post(review()).subarray(0, 200)).catch(() => {});
    const drip = setInterval(() => trickled.forEach((c) => c.write(enc.encode(" ")).catch(() => {})), 100);
    const probes = admissionsFor("127.0.0.1", server.port, 2_500);
    const corpus = await Promise.all(SMUGGLING.map(async ([name, raw, status]) => {
      const c = await open();
      await c.write(enc.encode(raw));
      const r = await answerOf(c, 5_000);
      return { name, ok: r.closed && r.text.startsWith(`HTTP/1.1 ${status} `), text: r.text.slice(0, 40) };
    }));
    const answers = await probes;
    clearInterval(drip);
    assert.deepEqual(corpus.filter((r) => !r.ok), [], "a corpus request was not refused with its status and closed");
    assert.deepEqual(answers.filter((a) => a !== "200"), [], "a normal admission failed during the attacks");
    assert.ok(!seen.includes("/smuggled"), "a smuggled request reached the handler");
    const trickles = await Promise.all(cut);
    assert.ok(trickles.every((r) => r.closed && r.text.startsWith("HTTP/1.1 408 ")), "a trickled body was not cut off");
  } finally {
    closeAll(trickled);
    await server.stop();
  }
});

Deno.test("file descriptors run out: the server goes unhealthy, and answers again once they are back", async () => {
  const script = new URL("./fixtures/fd_server.ts", import.meta.url).pathname;
  const child = new Deno.Command("bash", {
    args: ["-c", `ulimit -n 160 && exec "${Deno.execPath()}" run --allow-all "${script}"`],
    stdin: "piped",
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = "";
  const nextLine = async (): Promise<string> => {
    while (!buffered.includes("\n")) {
      const { value, done } = await lines.read();
      if (done) throw new Error(`the server ended; it printed ${JSON.stringify(buffered)}`);
      buffered += value;
    }
    const i = buffered.indexOf("\n");
    const line = buffered.slice(0, i);
    buffered = buffered.slice(i + 1);
    return line;
  };
  const held: Deno.Conn[] = [];
  try {
    const port = Number(await nextLine());
    const open = () => Deno.connect({ hostname: "127.0.0.1", port });
    const settled = await Promise.allSettled(Array.from({ length: 250 }, open));
    for (const s of settled) if (s.status === "fulfilled") held.push(s.value);
    assert.equal(await nextLine(), "unhealthy");
    closeAll(held.splice(0));
    let answer = "";
    const until = performance.now() + 10_000;
    while (answer !== "ok" && performance.now() < until) {
      const client = Deno.createHttpClient({ poolMaxIdlePerHost: 0 });
      answer = await fetch(`http://127.0.0.1:${port}/`, { client, signal: AbortSignal.timeout(2_000) })
        .then((r) => r.text(), () => "");
      client.close();
    }
    assert.equal(answer, "ok", "no answer after the descriptors came back");
    assert.equal(await nextLine(), "healthy");
  } finally {
    closeAll(held);
    await child.stdin.close();
    await child.status;
    await lines.cancel();
  }
});
