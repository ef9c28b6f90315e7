/**
 * The RevisionResolver against real Git servers on loopback (tests/git_kit.ts):
 * it picks up new commits, reads the credentials Secret, keeps the last commit
 * while resolves fail, bounds how many run at once, and leaves no git process
 * behind when it stops.
 */
import { serveGitDaemon } from "../../testing/git_server.ts";
import assert from "node:assert/strict";
import { resolveRef } from "../../lib/git/resolve.ts";
import { type RevisionKey, revisionKey, RevisionResolver } from "../../lib/git/resolver.ts";
import {
  b64,
  LOCAL,
  makeRepo,
  processesMentioning,
  pushCommit,
  startHttpGit,
  startHungServer,
  waitFor,
} from "../git_kit.ts";

Deno.test("RevisionResolver picks up a new commit after intervalMs and calls onChange once per change", async () => {
  const root = await Deno.makeTempDir({ prefix: "nico-git-" });
  const { work, commits } = await makeRepo(root);
  const daemon = await serveGitDaemon(root);
  const changes: RevisionKey[] = [];
  let polls = 0;
  const resolver = new RevisionResolver({
    ...LOCAL,
    intervalMs: 50,
    onChange: (k) => changes.push(k),
    resolve: (...args) => (polls++, resolveRef(...args)),
  });
  /** Waits until every key was resolved `rounds` more times: intervals counted by what happened, not by the clock. */
  const morePolls = (rounds: number) => {
    const from = polls;
    return waitFor(`${rounds} more rounds of polls`, () => polls >= from + 2 * rounds);
  };
  const key: RevisionKey = { url: `${daemon.url}/repo.git`, ref: "main" };
  const head: RevisionKey = { url: `${daemon.url}/repo.git` };
  try {
    assert.deepEqual(resolver.lookup(key), {}, "the first lookup answers at once, with nothing yet");
    resolver.lookup(head);
    await waitFor("both keys to resolve", () => changes.length === 2);
    assert.equal(resolver.lookup(key).commit, commits.main);
    assert.equal(resolver.lookup(head).commit, commits.main);
    assert.ok(resolver.lookup(key).resolvedAt instanceof Date);
    assert.deepEqual(changes.map(revisionKey).sort(), [revisionKey(key), revisionKey(head)].sort());

    // Several intervals without a change: no more calls.
    await morePolls(3);
    assert.equal(changes.length, 2);

    const next = await pushCommit(work, "rolled");
    await waitFor("the new commit", () => resolver.lookup(key).commit === next);
    await waitFor("the default branch too", () => resolver.lookup(head).commit === next);
    await morePolls(3);
    assert.equal(changes.length, 4, "one call per key per change");
    assert.deepEqual(changes.slice(2).map(revisionKey).sort(), [revisionKey(key), revisionKey(head)].sort());

    // A 40-hex ref is answered without a cache entry.
    assert.deepEqual(resolver.lookup({ url: key.url, ref: commits.first }), { commit: commits.first });
    assert.equal(resolver.keys().length, 2);
    resolver.forget(head);
    assert.deepEqual(resolver.keys(), [key]);
  } finally {
    await resolver.stop();
    await daemon.stop();
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("RevisionResolver reads the credentials Secret, reports errors, and recovers", async () => {
  const root = await Deno.makeTempDir({ prefix: "nico-git-" });
  const { commits } = await makeRepo(root);
  const password = "correct-horse-battery";
  const http = startHttpGit(root, { alice: password });
  const secrets = new Map<string, Record<string, string>>();
  const changes: string[] = [];
  const resolver = new RevisionResolver({
    ...LOCAL,
    intervalMs: 60_000,
    retryMs: 20,
    secretLookup: (ns, name) => Promise.resolve(secrets.get(`${ns}/${name}`)),
    onChange: (k) => changes.push(revisionKey(k)),
  });
  const key: RevisionKey = {
    url: `${http.url}/repo.git`,
    ref: "dev",
    credentialsSecret: { namespace: "infra", name: "git-credentials" },
  };
  try {
    resolver.lookup(key);
    await waitFor("an error", () => resolver.lookup(key).error);
    assert.deepEqual(resolver.lookup(key), { error: "credentialsRef Secret infra/git-credentials not found" });
    assert.equal(changes.length, 1);

    secrets.set("infra/git-credentials", { username: b64("alice"), password: b64("wrong-wrong-wrong") });
    await waitFor("the auth error", () => resolver.lookup(key).error?.startsWith("authentication"));
    assert.ok(!resolver.lookup(key).error!.includes("wrong-wrong-wrong"));
    assert.equal(changes.length, 2);

    // Retried with backoff until the Secret is fixed.
    secrets.set("infra/git-credentials", { username: b64("alice"), password: b64(password) });
    await waitFor("the commit", () => resolver.lookup(key).commit);
    assert.deepEqual(Object.keys(resolver.lookup(key)).sort(), ["commit", "resolvedAt"]);
    assert.equal(resolver.lookup(key).commit, commits.dev);
    assert.equal(changes.length, 3);
  } finally {
    await resolver.stop();
    await http.stop();
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("RevisionResolver keeps the last commit while resolves fail, and forget stops polling", async () => {
  let calls = 0;
  let witnessCalls = 0;
  let fail = false;
  const changes: string[] = [];
  const resolver = new RevisionResolver({
    ...LOCAL,
    intervalMs: 30,
    retryMs: 10,
    onChange: (k) => changes.push(revisionKey(k)),
    resolve: (url) => {
      if (url.endsWith("witness.git")) return Promise.resolve((witnessCalls++, "b".repeat(40)));
      calls++;
      return fail ? Promise.reject(new Error("network down")) : Promise.resolve("a".repeat(40));
    },
  });
  const key = { url: "https://example.com/repo.git" };
  try {
    resolver.lookup(key);
    await waitFor("the commit", () => resolver.lookup(key).commit);
    fail = true;
    await waitFor("the error", () => resolver.lookup(key).error);
    const r = resolver.lookup(key);
    assert.equal(r.commit, "a".repeat(40));
    assert.equal(r.error, "network down");
    const failing = calls;
    await waitFor("retries", () => calls >= failing + 3);
    assert.equal(changes.length, 2, "the same error again is no change");
    fail = false;
    await waitFor("recovery", () => resolver.lookup(key).error === undefined);
    assert.equal(changes.length, 3);
    resolver.forget(key);
    const after = calls;
    // Another key keeps being polled: several of its rounds pass, and the forgotten key has none.
    resolver.lookup({ url: "https://example.com/witness.git" });
    await waitFor("three polls of another key", () => witnessCalls >= 3);
    assert.equal(calls, after, "no resolve after forget");
  } finally {
    await resolver.stop();
  }
});

Deno.test("RevisionResolver runs at most `concurrency` resolves at once", async () => {
  let running = 0;
  let most = 0;
  /** Each resolve waits here until the test lets it finish, so resolves overlap as long as the resolver allows. */
  const held: (() => void)[] = [];
  const resolver = new RevisionResolver({
    ...LOCAL,
    concurrency: 2,
    intervalMs: 60_000,
    resolve: async (url) => {
      running++;
      most = Math.max(most, running);
      await new Promise<void>((r) => held.push(r));
      running--;
      return url.endsWith("7") ? "b".repeat(40) : "c".repeat(40);
    },
  });
  try {
    for (let i = 0; i < 8; i++) resolver.lookup({ url: `https://example.com/repo${i}` });
    const done = () => resolver.keys().every((k) => resolver.lookup(k).commit);
    while (!done()) {
      await waitFor("a resolve to be running", () => held.length > 0 || done());
      held.shift()?.();
    }
    assert.equal(most, 2);
    assert.equal(resolver.lookup({ url: "https://example.com/repo7" }).commit, "b".repeat(40));
  } finally {
    await resolver.stop();
  }
});

Deno.test("RevisionResolver.stop kills a running git and leaves nothing behind", async () => {
  const hung = startHungServer();
  const url = `http://127.0.0.1:${hung.port}/stop.git`;
  let changed = 0;
  const resolver = new RevisionResolver({ ...LOCAL, timeoutMs: 60_000, onChange: () => changed++ });
  try {
    resolver.lookup({ url });
    await waitFor("git's http helper to connect", () => hung.accepted() > 0, 5_000);
    assert.ok(processesMentioning(`remote-http ${url}`).length > 0, "the helper is running");
    const started = Date.now();
    await resolver.stop();
    assert.ok(Date.now() - started < 2_000, "stop waits for the killed git only");
    assert.equal(changed, 0, "a cancelled resolve is no change");
    assert.deepEqual(resolver.lookup({ url }), {}, "after stop, lookups answer from the cache only");
    await waitFor("git and its helpers to exit", () => processesMentioning(url).length === 0, 5_000);
  } finally {
    await resolver.stop();
    await hung.stop();
  }
});
