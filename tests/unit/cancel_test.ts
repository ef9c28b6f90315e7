/**
 * Cancellation: every client verb takes a signal, a client made with
 * `with({ signal })` aborts all its requests, and a controller's shutdown
 * aborts a reconcile stuck in a slow request within its grace period.
 * The slow server is a loopback HTTP server that never answers.
 */
import assert from "node:assert/strict";
import { KubeClient } from "../../lib/kube/client.ts";
import { staticCredentials } from "../../lib/kube/credentials.ts";
import { SECRETS } from "../../lib/kube/resources.ts";
import { Controller } from "../../lib/runtime/controller.ts";
import { silentLogger } from "../../lib/runtime/log.ts";
import { eventually } from "../../testing/helpers.ts";

/** A loopback server that holds every request open until the client goes away. */
function slowServer() {
  const started: string[] = [];
  const ended: string[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
    const what = `${req.method} ${new URL(req.url).pathname}`;
    started.push(what);
    return new Promise<Response>((resolve) => {
      req.signal.addEventListener("abort", () => {
        ended.push(what);
        resolve(new Response(null, { status: 499 }));
      });
    });
  });
  const kc = {
    server: `http://127.0.0.1:${server.addr.port}`,
    context: "slow",
    caCerts: [],
    credentials: staticCredentials(undefined),
  };
  const client = new KubeClient(kc, { timeoutMs: 60_000 });
  return {
    client,
    started,
    ended,
    async stop() {
      await client.close();
      await server.shutdown();
    },
  };
}

async function until(what: string, cond: () => boolean, ms = 5000): Promise<void> {
  await eventually(what, cond, ms, 10);
}

const secret = { metadata: { name: "s", namespace: "ns" } };

Deno.test("every client verb is aborted by its signal, and the server sees the request end", async () => {
  const slow = slowServer();
  try {
    const c = slow.client;
    const verbs: Record<string, (signal: AbortSignal) => Promise<unknown>> = {
      get: (signal) => c.get(SECRETS, "s", "ns", { signal }),
      list: (signal) => c.list(SECRETS, { namespace: "ns", signal }),
      create: (signal) => c.create(SECRETS, secret, { signal }),
      replace: (signal) => c.replace(SECRETS, secret, { signal }),
      replaceStatus: (signal) => c.replaceStatus(SECRETS, secret, { signal }),
      mergePatch: (signal) => c.mergePatch(SECRETS, "s", "ns", {}, undefined, { signal }),
      jsonPatch: (signal) => c.jsonPatch(SECRETS, "s", "ns", [], { signal }),
      apply: (signal) => c.apply(SECRETS, secret, { signal }),
      delete: (signal) => c.delete(SECRETS, "s", "ns", { signal }),
      getText: (signal) => c.getText("/readyz", signal),
      watch: async (signal) => {
        for await (const _ of c.watch(SECRETS, { namespace: "ns", signal })) break;
      },
    };
    for (const [verb, call] of Object.entries(verbs)) {
      const abort = new AbortController();
      const before = slow.ended.length;
      const pending = call(abort.signal).then(() => "resolved", (err) => `rejected: ${err?.name}`);
      await until(`${verb} reaches the server`, () => slow.started.length > before);
      const t0 = performance.now();
      abort.abort();
      const outcome = await pending;
      assert.ok(
        outcome.startsWith("rejected") || verb === "watch",
        `${verb}: an aborted request must fail, got ${outcome}`,
      );
      await until(`${verb}'s request ends on the server`, () => slow.ended.length > before, 2000);
      assert.ok(performance.now() - t0 < 2000, `${verb} took ${performance.now() - t0} ms to abort`);
    }
  } finally {
    await slow.stop();
  }
});

Deno.test("a client made with({ signal }) aborts all its requests, on top of each call's own", async () => {
  const slow = slowServer();
  try {
    const pass = new AbortController();
    const scoped = slow.client.with({ signal: pass.signal });
    const calls = [scoped.get(SECRETS, "a", "ns"), scoped.list(SECRETS, { namespace: "ns" })].map((p) =>
      p.then(() => "resolved", () => "rejected")
    );
    await until("both requests reach the server", () => slow.started.length === 2);
    assert.equal(scoped.aborted, false);
    pass.abort();
    assert.deepEqual(await Promise.all(calls), ["rejected", "rejected"]);
    assert.equal(scoped.aborted, true);
    await until("both requests end on the server", () => slow.ended.length === 2);
  } finally {
    await slow.stop();
  }
});

Deno.test("shutdown during a slow request: the reconcile is aborted and run() ends within the grace period", async () => {
  const slow = slowServer();
  try {
    const grace = 300;
    const seen: { signal?: AbortSignal; reconcileID?: unknown } = {};
    let settled: string | undefined;
    const ctl = new Controller(
      { name: "slow", logger: silentLogger, shutdownTimeoutMs: grace },
      async (_key, signal, log) => {
        seen.signal = signal;
        seen.reconcileID = log !== undefined;
        try {
          await slow.client.with({ signal }).get(SECRETS, "s", "ns");
          settled = "answered";
        } catch (err) {
          settled = `aborted: ${(err as Error).name}`;
          throw err;
        }
      },
    );
    const stop = new AbortController();
    const done = ctl.run(stop.signal);
    ctl.enqueue("ns/s");
    await until("the reconcile's request reaches the server", () => slow.started.length === 1);
    const t0 = performance.now();
    stop.abort();
    await done;
    const took = performance.now() - t0;
    console.log(`shutdown with a request in flight took ${Math.round(took)} ms (grace ${grace} ms)`);
    assert.ok(took < grace + 1500, `run() took ${took} ms`);
    assert.equal(seen.signal?.aborted, true, "the reconcile's signal was aborted");
    assert.match(settled ?? "", /^aborted/);
    await until("the request ends on the server", () => slow.ended.length === 1, 1000);
  } finally {
    await slow.stop();
  }
});
