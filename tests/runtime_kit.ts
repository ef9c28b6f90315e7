/** Helpers shared by the runtime tests: fake clocks, pending promises, and the envtest kit (a control plane whose Secrets bypass the watch cache, a scripted client, cache-vs-server checks). */
import assert from "node:assert/strict";
import {
  KubeClient,
  type KubeObject,
  type ListOptions,
  type ListResult,
  loadKubeConfig,
  type WatchEvent,
  type WatchOptions,
} from "../lib/kube/client.ts";
import type { Resource } from "../lib/kube/resources.ts";
import {
  ExponentialBackoff,
  Informer,
  type ReconcileOutcome,
  sleep,
  untilAborted,
  WorkQueue,
} from "../lib/runtime/mod.ts";
import type { ControlPlane } from "../testing/envtest/controlplane.ts";
import { ownControlPlane } from "../testing/helpers.ts";

// ---------------------------------------------------------------- helpers

const realSetTimeout = globalThis.setTimeout;
const realClearTimeout = globalThis.clearTimeout;

/** One turn of the event loop: every pending microtask and every timer already due runs (no waiting). */
export function turn(): Promise<void> {
  return new Promise((r) => realSetTimeout(r, 0));
}

/** Whether `p` is still pending once everything that was ready to run has run (see {@link turn}). */
export async function pending(p: Promise<unknown>): Promise<boolean> {
  let settled = false;
  p.then(() => (settled = true), () => (settled = true));
  await turn();
  await turn();
  return !settled;
}

/**
 * Timers under the test's control: `setTimeout` and `clearTimeout` are
 * replaced until `restore()`, and time moves only with `advance(ms)`, which
 * runs every timer due by then, in order, with a turn of the event loop
 * after each. `now` is the same clock, for code that takes one.
 */
export function fakeTimers() {
  let now = 0;
  let nextId = 1;
  const timers = new Map<number, { at: number; fn: () => void }>();
  globalThis.setTimeout = ((fn: () => void, ms = 0) => {
    const id = nextId++;
    timers.set(id, { at: now + Math.max(0, ms), fn });
    return id;
  }) as unknown as typeof setTimeout;
  globalThis.clearTimeout = ((id?: number) => {
    if (id !== undefined) timers.delete(id);
  }) as unknown as typeof clearTimeout;
  return {
    now: () => now,
    async advance(ms: number): Promise<void> {
      const end = now + ms;
      while (true) {
        const due = [...timers].filter(([, t]) => t.at <= end).sort(([a, x], [b, y]) => x.at - y.at || a - b)[0];
        if (!due) break;
        timers.delete(due[0]);
        now = due[1].at;
        due[1].fn();
        await turn();
      }
      now = end;
      await turn();
    },
    restore(): void {
      globalThis.setTimeout = realSetTimeout;
      globalThis.clearTimeout = realClearTimeout;
    },
  };
}

export function fakeClock(start = 1_000) {
  let t = start;
  return { now: () => t, advance: (ms: number) => (t += ms) };
}

/** A queue whose rate limiter is a plain exponential backoff (no bucket). */
export function queueWithBackoff(baseMs: number, maxMs = 1_000_000) {
  return new WorkQueue({ rateLimiter: new ExponentialBackoff({ baseMs, maxMs }) });
}

// ---------------------------------------------------------------- relist diff

export interface ConfigMap extends KubeObject {
  data?: Record<string, string>;
}

// ---------------------------------------------------------------- envtest

export const CONFIGMAPS: Resource = {
  group: "",
  version: "v1",
  kind: "ConfigMap",
  plural: "configmaps",
  namespaced: true,
};
export const SECRETS: Resource = { group: "", version: "v1", kind: "Secret", plural: "secrets", namespaced: true };

/**
 * One control plane for the file. Secrets bypass the API server's watch
 * cache so that a watch from a compacted resourceVersion gets a real 410
 * from etcd (with the cache, old resourceVersions are served from memory);
 * ConfigMaps keep the cache, as in production.
 */
export const env = ownControlPlane({ apiserverArgs: ["--watch-cache-sizes=secrets#0"] });

/**
 * A real client whose lists and watches can be held or failed, to drive an
 * informer through its error paths.
 */
export class ScriptedClient extends KubeClient {
  lists = 0;
  watches: { at: number; resourceVersion: string | undefined; streamed?: boolean }[] = [];
  /** Inject these errors, in order, into the next lists / watches. */
  listFailures: unknown[] = [];
  watchFailures: unknown[] = [];
  /** When set, watches wait for it (or their abort) before starting (not the one streaming the initial state). */
  hold: Promise<void> | undefined;
  /** Inject these errors, in order, into the next watches that stream an initial state. */
  streamFailures: unknown[] = [];
  /** Pages read by lists. */
  pages = 0;
  /** Run once, after the next page a list reads and before it asks for the one after. */
  betweenPages: (() => Promise<unknown>) | undefined;
  /** When set, the next watch breaks (a connection reset) after passing on this many more events. */
  breakAfter: number | undefined;

  static from(path: string): ScriptedClient {
    return new ScriptedClient(loadKubeConfig({ path }), { userAgent: "nico-tests", fieldManager: "nico-tests" });
  }

  override async *listPages<T extends KubeObject>(r: Resource, opts: ListOptions = {}): AsyncGenerator<ListResult<T>> {
    this.lists++;
    const failure = this.listFailures.shift();
    if (failure) throw failure;
    for await (const page of super.listPages<T>(r, opts)) {
      this.pages++;
      yield page;
      const between = this.betweenPages;
      this.betweenPages = undefined;
      await between?.();
    }
  }

  override async *watch<T extends KubeObject>(r: Resource, opts: WatchOptions = {}): AsyncGenerator<WatchEvent<T>> {
    this.watches.push({
      at: performance.now(),
      resourceVersion: opts.resourceVersion,
      ...(opts.sendInitialEvents ? { streamed: true } : {}),
    });
    // A streamed initial state is the informer's list: it is not held, and fails only as a refusal (streamFailures).
    if (opts.sendInitialEvents) {
      const refusal = this.streamFailures.shift();
      if (refusal) throw refusal;
      yield* this.#breakable(super.watch<T>(r, opts));
      return;
    }
    if (this.hold) await untilAborted(opts.signal ?? new AbortController().signal, this.hold);
    opts.signal?.throwIfAborted();
    const failure = this.watchFailures.shift();
    if (failure) throw failure;
    yield* this.#breakable(super.watch<T>(r, opts));
  }

  /** Passes the events on; once {@link breakAfter} of them went through, throws as a connection that broke would. */
  async *#breakable<E>(events: AsyncGenerator<E>): AsyncGenerator<E> {
    for await (const e of events) {
      if (this.breakAfter !== undefined && this.breakAfter-- <= 0) {
        this.breakAfter = undefined;
        throw new TypeError("error reading a body from connection: connection reset (test)");
      }
      yield e;
    }
  }
}

/**
 * Starts an informer and stops it when the scope ends, also when an
 * assertion failed; fails if stopping takes long (the watch was not aborted).
 */
export function started<T extends KubeObject>(informer: Informer<T>): AsyncDisposable {
  informer.start();
  return {
    async [Symbol.asyncDispose]() {
      const give = new AbortController();
      const stopped = await Promise.race([
        informer.stop().then(() => true),
        sleep(5_000, give.signal).then(() => false),
      ]);
      give.abort();
      assert.ok(stopped, "stop() did not end the informer within 5 s");
    },
  };
}

export interface Secret extends KubeObject {
  data?: Record<string, string>;
  stringData?: Record<string, string>;
}

/** `data.v` of a ConfigMap, or of a Secret (base64). */
export function valueOf(obj: ConfigMap | Secret | undefined): string {
  const v = obj?.data?.["v"];
  if (v === undefined) return "?";
  return obj?.kind === "Secret" ? atob(v) : v;
}

/** Records informer events as `type name v [was v]`. */
export function recordEvents<T extends ConfigMap | Secret>(informer: Informer<T>): string[] {
  const events: string[] = [];
  informer.onEvent((type, obj, old) => {
    const was = type === "update" ? ` was ${valueOf(old)}` : "";
    events.push(`${type} ${obj.metadata.name} ${valueOf(obj)}${was}`);
  });
  return events;
}

export function configMap(ns: string, name: string, v: string, labels: Record<string, string> = {}): ConfigMap {
  return { metadata: { name, namespace: ns, labels }, data: { v } };
}

export function secret(ns: string, name: string, v: string): Secret {
  return { metadata: { name, namespace: ns }, stringData: { v } };
}

export async function serverState(client: KubeClient, r: Resource, ns: string): Promise<string[]> {
  const { items } = await client.list<KubeObject>(r, { namespace: ns });
  return items.map((i) => `${i.metadata.name}@${i.metadata.resourceVersion}`).sort();
}

export function cacheState(informer: Informer<KubeObject>, ns: string): string[] {
  return informer.list(ns).map((i) => `${i.metadata.name}@${i.metadata.resourceVersion}`).sort();
}

/** The client URL of the control plane's etcd, read from its command line (Linux). */
export function etcdUrl(cp: ControlPlane): string {
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    let args: string[];
    try {
      args = Deno.readTextFileSync(`/proc/${entry.name}/cmdline`).split("\0");
    } catch {
      continue;
    }
    if (!args[0]?.endsWith("/etcd") || !args.includes(`--data-dir=${cp.dir}/etcd`)) continue;
    const flag = args.find((a) => a.startsWith("--listen-client-urls="));
    if (flag) return flag.slice(flag.indexOf("=") + 1).split(",")[0]!;
  }
  throw new Error(`no etcd process for ${cp.dir}`);
}

/** Compacts etcd's history up to its current revision; answers that revision. */
export async function compactEtcd(cp: ControlPlane): Promise<number> {
  const url = etcdUrl(cp);
  const post = async (path: string, body: unknown) => {
    const res = await fetch(`${url}${path}`, { method: "POST", body: JSON.stringify(body) });
    const json = await res.json();
    assert.equal(res.status, 200, JSON.stringify(json));
    return json as { header: { revision: string } };
  };
  const revision = Number((await post("/v3/kv/range", { key: btoa("/") })).header.revision);
  await post("/v3/kv/compaction", { revision, physical: true });
  return revision;
}

/** Records each reconcile outcome with its key, through the controller hooks. */
export function outcomesRecorder() {
  const outcomes: [ReconcileOutcome, string][] = [];
  return { outcomes, hooks: { reconciled: (o: ReconcileOutcome, _s: number, key: string) => outcomes.push([o, key]) } };
}
