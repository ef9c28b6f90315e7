/** Informers against a real kube-apiserver: events, cache, relists. */
import assert from "node:assert/strict";
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

Deno.test("envtest: the informer sees add, update and delete, and its cache matches the server", async () => {
  const cp = await env.get();
  const ns = await cp.namespace("inf");
  await cp.client.create(CONFIGMAPS, configMap(ns, "pre", "1"));
  const informer = new Informer<ConfigMap>(cp.client, CONFIGMAPS, { namespace: ns, logger: silentLogger });
  const events = recordEvents(informer);
  informer.onEvent(() => {
    throw new Error("a broken handler must not stop the informer");
  });
  assert.equal(informer.hasSynced(), false);
  {
    await using _ = started(informer);
    await informer.synced();
    assert.equal(informer.hasSynced(), true);
    assert.deepEqual(events, ["add pre 1"]);

    await cp.client.create(CONFIGMAPS, configMap(ns, "a", "1", { app: "x" }));
    await cp.client.create(CONFIGMAPS, configMap(ns, "b", "1", { app: "y" }));
    await cp.client.mergePatch(CONFIGMAPS, "a", ns, { data: { v: "2" } });
    await cp.client.delete(CONFIGMAPS, "pre", ns);
    await eventually("five events", () => events.length >= 5, 30_000);
    assert.deepEqual(events, ["add pre 1", "add a 1", "add b 1", "update a 2 was 1", "delete pre 1"]);

    assert.deepEqual(cacheState(informer, ns), await serverState(cp.client, CONFIGMAPS, ns));
    assert.equal(informer.get(ns, "a")?.data?.["v"], "2");
    assert.equal(informer.get(ns, "pre"), undefined);
    assert.deepEqual(informer.byLabel("app", "x").map((o) => o.metadata.name), ["a"]);
    assert.deepEqual(informer.byLabel("app", "x", "elsewhere"), []);
    assert.deepEqual(informer.filter((o) => o.metadata.labels?.["app"] === "y").map((o) => o.metadata.name), ["b"]);
    assert.deepEqual(informer.list("elsewhere"), []);
    const server = await cp.client.list<ConfigMap>(CONFIGMAPS, { namespace: ns });
    const newest = Math.max(...server.items.map((i) => Number(i.metadata.resourceVersion)));
    assert.ok(Number(informer.resourceVersion) >= newest, `${informer.resourceVersion} < ${newest}`);
  }
  assert.equal(informer.running, false);
  // A running informer sees the change: the stopped one had every chance to see it too.
  const witness = new Informer<ConfigMap>(cp.client, CONFIGMAPS, { namespace: ns, logger: silentLogger });
  {
    await using _ = started(witness);
    await witness.synced();
    await cp.client.create(CONFIGMAPS, configMap(ns, "after", "1"));
    await eventually("the witness to see the change", () => witness.get(ns, "after"), 30_000, 10);
  }
  assert.equal(events.length, 5, "a stopped informer still received events");
  assert.equal(informer.stats().lists, 1);
});

Deno.test("envtest: a label-selected informer drops objects that stop matching", async () => {
  const cp = await env.get();
  const ns = await cp.namespace("sel");
  const informer = new Informer<ConfigMap>(cp.client, CONFIGMAPS, {
    namespace: ns,
    labelSelector: "app=x",
    logger: silentLogger,
  });
  const events = recordEvents(informer);
  {
    await using _ = started(informer);
    await informer.synced();
    await cp.client.create(CONFIGMAPS, configMap(ns, "a", "1", { app: "x" }));
    await cp.client.create(CONFIGMAPS, configMap(ns, "other", "1", { app: "y" }));
    await cp.client.mergePatch(CONFIGMAPS, "a", ns, { metadata: { labels: { app: "y" } } });
    await eventually("add then delete", () => events.length >= 2, 30_000);
  }
  assert.deepEqual(events, ["add a 1", "delete a 1"]);
  assert.deepEqual(informer.list(), []);
});

Deno.test("envtest: the informer resumes watches the server ends, without relisting", async () => {
  const cp = await env.get();
  const ns = await cp.namespace("resume");
  const client = ScriptedClient.from(cp.kubeconfigPath);
  const informer = new Informer<ConfigMap>(client, CONFIGMAPS, {
    namespace: ns,
    watchTimeoutSeconds: 1,
    logger: silentLogger,
    initialState: "pages", // list, then watch: the streamed state is tested in informer_stream_api_test.ts
  });
  const events = recordEvents(informer);
  {
    await using _ = started(informer);
    await informer.synced();
    await eventually("three watches", () => informer.stats().watches >= 3, 20_000);
    await cp.client.create(CONFIGMAPS, configMap(ns, "a", "1"));
    await eventually("the add", () => events.length >= 1, 30_000);
    const rvAfterAdd = informer.resourceVersion;
    await eventually("a watch from after the add", () => client.watches.at(-1)?.resourceVersion === rvAfterAdd, 30_000);
    await cp.client.mergePatch(CONFIGMAPS, "a", ns, { data: { v: "2" } });
    await eventually("the update", () => events.length >= 2, 30_000);
  }
  assert.deepEqual(events, ["add a 1", "update a 2 was 1"], "events were lost or replayed across watch restarts");
  const stats = informer.stats();
  assert.equal(stats.lists, 1, "a watch the server ended must be resumed, not relisted");
  assert.equal(stats.gone, 0);
  assert.equal(stats.errors, 0);
  assert.ok(stats.watches >= 4, `watches: ${stats.watches}`);
  for (const w of client.watches) assert.ok(w.resourceVersion, "every watch resumes from a resourceVersion");
});

Deno.test({
  name: "envtest: a real 410 Gone (etcd compacted) relists and emits the missed changes as synthetic events",
  ignore: Deno.build.os !== "linux",
  async fn() {
    const cp = await env.get();
    const ns = await cp.namespace("gone");
    for (const name of ["keep", "change", "remove"]) await cp.client.create(SECRETS, secret(ns, name, "1"));
    const client = ScriptedClient.from(cp.kubeconfigPath);
    let release!: () => void;
    client.hold = new Promise((r) => (release = r));
    const informer = new Informer<Secret>(client, SECRETS, {
      namespace: ns,
      logger: silentLogger,
      minBackoffMs: 10,
      initialState: "pages",
    });
    const events = recordEvents(informer);
    {
      await using _ = started(informer);
      await informer.synced();
      await eventually("the held watch", () => client.watches.length === 1, 30_000);
      assert.deepEqual(events.sort(), ["add change 1", "add keep 1", "add remove 1"]);
      events.length = 0;
      const listedAt = Number(informer.resourceVersion);

      // Changes the informer cannot see (its watch is held), then etcd forgets the history.
      await cp.client.mergePatch(SECRETS, "change", ns, { stringData: { v: "2" } });
      await cp.client.delete(SECRETS, "remove", ns);
      await cp.client.create(SECRETS, secret(ns, "new", "1"));
      assert.ok((await compactEtcd(cp)) > listedAt);
      client.hold = undefined;
      release();

      await eventually("the relist", () => informer.stats().lists === 2, 30_000);
      await cp.client.create(SECRETS, secret(ns, "later", "1"));
      await eventually("the event after the relist", () => events.includes("add later 1"), 30_000);
    }
    assert.deepEqual(events, ["delete remove 1", "update change 2 was 1", "add new 1", "add later 1"]);
    assert.equal(informer.stats().gone, 1, "the server answered 410 once");
    assert.equal(informer.stats().errors, 0);
    assert.ok(
      Number(client.watches[1]?.resourceVersion) > Number(client.watches[0]?.resourceVersion),
      "after the 410 the watch starts from the fresh list",
    );
    assert.deepEqual(cacheState(informer, ns), await serverState(cp.client, SECRETS, ns));
  },
});

Deno.test("envtest: an informer's trim drops what it names from every object it caches, listed or watched", async () => {
  const cp = await env.get();
  const ns = await cp.namespace("inf-trim");
  await cp.client.create(CONFIGMAPS, configMap(ns, "listed", "1", { app: "x" }));
  const informer = new Informer<ConfigMap>(cp.client, CONFIGMAPS, {
    namespace: ns,
    logger: silentLogger,
    trim: (o) => void delete (o as { data?: unknown }).data,
  });
  await using _ = started(informer);
  await informer.synced();
  await cp.client.create(CONFIGMAPS, configMap(ns, "watched", "1", { app: "x" }));
  await cp.client.mergePatch(CONFIGMAPS, "listed", ns, { data: { v: "2" } });
  await eventually("both cached", () => informer.list(ns).length === 2, 30_000);
  const server = await cp.client.get<ConfigMap>(CONFIGMAPS, "listed", ns);
  await eventually(
    "the cache at the server's version",
    () => informer.get(ns, "listed")?.metadata.resourceVersion === server?.metadata.resourceVersion,
    30_000,
  );
  for (const o of informer.list(ns)) {
    assert.equal(o.data, undefined, `${o.metadata.name} kept its data`);
    assert.equal(o.metadata.managedFields, undefined, `${o.metadata.name} kept its managedFields`);
    assert.equal(o.metadata.labels?.["app"], "x");
  }
  assert.equal(server?.data?.["v"], "2", "the server keeps what the cache drops");
});
