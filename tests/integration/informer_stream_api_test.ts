/**
 * An informer's initial state against a real kube-apiserver, in both modes (lib/runtime/initial.ts): streamed by a
 * watch (`sendInitialEvents`, then the same watch read on), or listed in pages; relists after a 410 Gone and after a
 * watch broken mid-stream, losing no change; a server that refuses the stream gets pages.
 */
import assert from "node:assert/strict";
import { ApiError } from "../../lib/kube/errors.ts";
import { Informer, silentLogger } from "../../lib/runtime/mod.ts";
import { eventually } from "../../testing/helpers.ts";
import {
  cacheState,
  compactEtcd,
  ConfigMap,
  configMap,
  CONFIGMAPS,
  env,
  recordEvents,
  ScriptedClient,
  Secret,
  secret,
  SECRETS,
  serverState,
  started,
} from "../runtime_kit.ts";

Deno.test("envtest: the streamed initial state fills the cache without a list, and the same watch goes on", async () => {
  const cp = await env.get();
  const ns = await cp.namespace("stream");
  for (const n of ["a", "b", "c"]) await cp.client.create(CONFIGMAPS, configMap(ns, n, "1"));
  const client = ScriptedClient.from(cp.kubeconfigPath);
  const informer = new Informer<ConfigMap>(client, CONFIGMAPS, { namespace: ns, logger: silentLogger });
  const events = recordEvents(informer);
  {
    await using _ = started(informer);
    await informer.synced();
    assert.deepEqual(events.toSorted(), ["add a 1", "add b 1", "add c 1"]);
    await cp.client.mergePatch(CONFIGMAPS, "a", ns, { data: { v: "2" } });
    await cp.client.delete(CONFIGMAPS, "b", ns);
    await eventually("the changes", () => events.length === 5, 30_000);
  }
  assert.deepEqual(events.slice(3), ["update a 2 was 1", "delete b 1"]);
  assert.equal(client.lists, 0, "no list: the state came streamed");
  assert.equal(client.watches[0]?.streamed, true, "the first watch streamed the state");
  assert.ok(client.watches.slice(1).every((w) => w.resourceVersion), "later watches go on from where it ended");
  assert.deepEqual({ ...informer.stats(), watches: 0 }, {
    lists: 1,
    streamed: 1,
    pages: 0,
    watches: 0,
    gone: 0,
    errors: 0,
    resyncs: 0,
  });
  assert.deepEqual(cacheState(informer, ns), await serverState(cp.client, CONFIGMAPS, ns));
});

Deno.test("envtest: listed in pages, each page read on its own; a continue token etcd compacted away starts the list again", async () => {
  const cp = await env.get();
  const ns = await cp.namespace("pages");
  for (let i = 0; i < 7; i++) await cp.client.create(SECRETS, secret(ns, `s-${i}`, "1"));
  const client = ScriptedClient.from(cp.kubeconfigPath);
  // After the first page, a change and a compaction: the token of the second page is too old (a real 410).
  client.betweenPages = async () => {
    await cp.client.mergePatch(SECRETS, "s-6", ns, { stringData: { v: "2" } });
    await compactEtcd(cp);
  };
  const informer = new Informer<Secret>(client, SECRETS, {
    namespace: ns,
    logger: silentLogger,
    initialState: "pages",
    pageSize: 2,
  });
  const events = recordEvents(informer);
  {
    await using _ = started(informer);
    await informer.synced();
  }
  assert.equal(client.lists, 2, "the list started again after its token expired");
  assert.equal(client.pages, 1 + 4, "one page, then the four pages of 2 of the list that worked");
  assert.equal(informer.stats().pages, 4, "the informer counts the pages of the list it kept");
  assert.equal(events.length, 7);
  assert.ok(events.includes("add s-6 2"), `the list after the 410 sees the change: ${events}`);
  assert.deepEqual(cacheState(informer, ns), await serverState(cp.client, SECRETS, ns));
});

Deno.test("envtest: streamed, a real 410 (etcd compacted) relists and emits the missed changes", async () => {
  const cp = await env.get();
  const ns = await cp.namespace("stream410");
  for (const name of ["keep", "change", "remove"]) await cp.client.create(SECRETS, secret(ns, name, "1"));
  const client = ScriptedClient.from(cp.kubeconfigPath);
  let release!: () => void;
  client.hold = new Promise((r) => (release = r));
  // The streamed watch ends after a second; the watch after it is held while etcd forgets the history.
  const informer = new Informer<Secret>(client, SECRETS, {
    namespace: ns,
    logger: silentLogger,
    minBackoffMs: 10,
    watchTimeoutSeconds: 1,
  });
  const events = recordEvents(informer);
  {
    await using _ = started(informer);
    await informer.synced();
    await eventually("the held watch after the stream", () => client.watches.length === 2, 30_000);
    events.length = 0;
    await cp.client.mergePatch(SECRETS, "change", ns, { stringData: { v: "2" } });
    await cp.client.delete(SECRETS, "remove", ns);
    await cp.client.create(SECRETS, secret(ns, "new", "1"));
    await compactEtcd(cp);
    client.hold = undefined;
    release();
    await eventually("the relist", () => informer.stats().lists === 2, 30_000);
    await cp.client.create(SECRETS, secret(ns, "later", "1"));
    await eventually("the event after the relist", () => events.includes("add later 1"), 30_000);
  }
  assert.deepEqual(events, ["delete remove 1", "update change 2 was 1", "add new 1", "add later 1"]);
  const stats = informer.stats();
  assert.equal(stats.gone, 1);
  assert.equal(client.watches[0]?.streamed, true, "the first state came streamed");
  // The relist asks for the stream again (this API server ends it early for a resource it serves from etcd without
  // a watch cache, as here after a compaction: then that relist is listed in pages).
  assert.equal(client.watches.filter((w) => w.streamed).length, 2);
  assert.equal(stats.streamed + client.lists, 2);
  assert.deepEqual(cacheState(informer, ns), await serverState(cp.client, SECRETS, ns));
});

Deno.test("envtest: a watch broken mid-stream relists, and no change is lost or told twice", async () => {
  const cp = await env.get();
  const ns = await cp.namespace("broken");
  for (const n of ["a", "b"]) await cp.client.create(CONFIGMAPS, configMap(ns, n, "1"));
  const client = ScriptedClient.from(cp.kubeconfigPath);
  const informer = new Informer<ConfigMap>(client, CONFIGMAPS, { namespace: ns, logger: silentLogger });
  const events = recordEvents(informer);
  {
    await using _ = started(informer);
    await informer.synced();
    events.length = 0;
    // The next event breaks the streamed watch: the changes arrive by watch or by the relist, each once.
    client.breakAfter = 0;
    await cp.client.mergePatch(CONFIGMAPS, "a", ns, { data: { v: "2" } });
    await cp.client.delete(CONFIGMAPS, "b", ns);
    await cp.client.create(CONFIGMAPS, configMap(ns, "c", "1"));
    await eventually("every change", () => events.length >= 3 && informer.stats().lists === 2, 30_000);
    await cp.client.mergePatch(CONFIGMAPS, "c", ns, { data: { v: "2" } });
    await eventually("the change after", () => events.includes("update c 2 was 1"), 30_000);
  }
  assert.deepEqual(events.slice(0, 3).toSorted(), ["add c 1", "delete b 1", "update a 2 was 1"]);
  assert.deepEqual(events.slice(3), ["update c 2 was 1"]);
  assert.equal(informer.stats().errors, 1, "the broken watch");
  assert.equal(informer.stats().streamed, 2, "the state streamed again after it");
  assert.deepEqual(cacheState(informer, ns), await serverState(cp.client, CONFIGMAPS, ns));
});

Deno.test("envtest: a server that refuses the streamed state gets pages, and is not asked again", async () => {
  const cp = await env.get();
  const ns = await cp.namespace("refused");
  for (const n of ["a", "b", "c"]) await cp.client.create(CONFIGMAPS, configMap(ns, n, "1"));
  const client = ScriptedClient.from(cp.kubeconfigPath);
  // What an API server without the WatchList feature answers.
  client.streamFailures = [
    new ApiError(
      422,
      "Invalid",
      "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled",
      "GET",
      "/api/v1/configmaps",
    ),
  ];
  client.watchFailures = [new ApiError(410, "Expired", "too old resource version", "WATCH", "/api/v1/configmaps")];
  const informer = new Informer<ConfigMap>(client, CONFIGMAPS, {
    namespace: ns,
    logger: silentLogger,
    minBackoffMs: 10,
  });
  const events = recordEvents(informer);
  {
    await using _ = started(informer);
    await informer.synced();
    await eventually("the relist after the 410", () => informer.stats().lists === 2, 30_000);
    await cp.client.create(CONFIGMAPS, configMap(ns, "d", "1"));
    await eventually("the add", () => events.includes("add d 1"), 30_000);
  }
  assert.deepEqual(events.toSorted(), ["add a 1", "add b 1", "add c 1", "add d 1"]);
  assert.equal(client.watches.filter((w) => w.streamed).length, 1, "asked for the stream once");
  assert.equal(client.lists, 2, "then listed, and listed again after the 410");
  assert.equal(informer.stats().streamed, 0);
  assert.deepEqual(cacheState(informer, ns), await serverState(cp.client, CONFIGMAPS, ns));
});
