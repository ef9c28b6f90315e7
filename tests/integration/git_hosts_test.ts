/**
 * What reaches git, against real Git servers on loopback (tests/git_kit.ts):
 * a host --git-allowed-hosts does not allow is refused before git runs, git's
 * errors say what failed and never what the remote said (security finding 6).
 * The host policy itself is tested without git in tests/unit/host_policy_test.ts.
 */
import assert from "node:assert/strict";
import { resolveRef } from "../../lib/git/resolve.ts";
import { parseHostPolicy } from "../../lib/git/hosts.ts";
import { LOCAL, rejection, startHungServer } from "../git_kit.ts";

Deno.test("finding 6: resolveRef refuses a host --git-allowed-hosts does not allow, before running git", async () => {
  const hung = startHungServer();
  try {
    for (const url of [`git://127.0.0.1:${hung.port}/repo.git`, `http://127.1:${hung.port}/repo.git`]) {
      const err = await rejection(resolveRef(url, "main", undefined, { timeoutMs: 2_000 }));
      assert.equal(err.reason, "Refused");
      assert.match(
        err.message,
        /host 127\.0\.0\.1 is a loopback address, which NICO refuses unless the operator lists it/,
      );
    }
    // A commit ref needs no network, but the repository still has to be allowed: NIO would fetch it.
    const sha = "0123456789abcdef0123456789abcdef01234567";
    await rejection(resolveRef(`git://127.0.0.1:${hung.port}/repo.git`, sha, undefined));
    const elsewhere = await rejection(
      resolveRef(`git://127.0.0.1:${hung.port}/repo.git`, "main", undefined, {
        allowedHosts: parseHostPolicy("git.example.test"),
      }),
    );
    assert.match(elsewhere.message, /not in the operator's --git-allowed-hosts \(git\.example\.test\)/);
    assert.equal(hung.accepted(), 0, "git connected to a refused host");
  } finally {
    await hung.stop();
  }
});

Deno.test("finding 6: git errors say what failed, never what the remote said", async (t) => {
  await t.step("nothing listens: could not reach the repository", async () => {
    const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const port = (probe.addr as Deno.NetAddr).port;
    probe.close();
    const err = await rejection(resolveRef(`http://127.0.0.1:${port}/repo.git`, "main", undefined, LOCAL));
    assert.equal(err.reason, "Unreachable");
    assert.equal(err.message, `git ls-remote http://127.0.0.1:${port}/repo.git failed: could not reach the repository`);
  });
  await t.step("a server that is not Git: its text stays out of the message", async () => {
    const marker = "REMOTE-CONTROLLED-TEXT internal-db.corp:5432 open";
    const ctl = new AbortController();
    const server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, signal: ctl.signal, onListen() {} },
      () => new Response(`${marker}\n`, { status: 200, headers: { "content-type": "text/plain" } }),
    );
    try {
      const url = `http://127.0.0.1:${server.addr.port}/repo.git`;
      const err = await rejection(resolveRef(url, "main", undefined, LOCAL));
      assert.equal(err.reason, "Failed");
      assert.ok(!err.message.includes("REMOTE-CONTROLLED"), err.message);
      assert.equal(err.message, `git ls-remote ${url} failed: the server did not answer like a Git repository`);
    } finally {
      ctl.abort();
      await server.finished;
    }
  });
  await t.step("a redirect is not followed", async () => {
    const ctl = new AbortController();
    const server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, signal: ctl.signal, onListen() {} },
      () => new Response(null, { status: 302, headers: { location: "http://169.254.169.254/latest/" } }),
    );
    try {
      const err = await rejection(resolveRef(`http://127.0.0.1:${server.addr.port}/r.git`, "main", undefined, LOCAL));
      assert.match(err.message, /redirect, which NICO does not follow/);
    } finally {
      ctl.abort();
      await server.finished;
    }
  });
});
