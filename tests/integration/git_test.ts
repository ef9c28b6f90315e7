/**
 * Resolving `ref` to a commit against real Git servers on loopback: `git
 * daemon` for anonymous git://, and `git http-backend` behind a small HTTP
 * server that requires basic auth (tests/git_kit.ts); credentials, SSH
 * refused, and the timeout. The resolver that polls: git_resolver_test.ts;
 * allowed hosts and what errors say: git_hosts_test.ts.
 */
import { serveGitDaemon } from "../../testing/git_server.ts";
import assert from "node:assert/strict";
import { basicAuthorization, credentialsFromSecret, SSH_UNSUPPORTED } from "../../lib/git/credentials.ts";
import { resolveRef } from "../../lib/git/resolve.ts";
import { isSshUrl, redactUrl } from "../../lib/git/url.ts";
import { parseHostPolicy } from "../../lib/git/hosts.ts";
import {
  b64,
  LOCAL,
  makeRepo,
  processesMentioning,
  pushCommit,
  rejection,
  startHttpGit,
  startHungServer,
  waitFor,
} from "../git_kit.ts";

Deno.test("git is installed", async () => {
  const out = await new Deno.Command("which", { args: ["git"], stdout: "piped" }).output();
  assert.ok(out.success, "git must be on PATH for these tests");
});

Deno.test("resolveRef over git:// (git daemon)", async (t) => {
  const root = await Deno.makeTempDir({ prefix: "nico-git-" });
  const { work, commits } = await makeRepo(root);
  const daemon = await serveGitDaemon(root);
  const repo = `${daemon.url}/repo.git`;
  try {
    await t.step("an absent ref is the default branch (HEAD)", async () => {
      assert.equal(await resolveRef(repo, undefined, undefined, LOCAL), commits.main);
      assert.equal(await resolveRef(repo, "HEAD", undefined, LOCAL), commits.main);
    });
    await t.step("a branch", async () => {
      assert.equal(await resolveRef(repo, "dev", undefined, LOCAL), commits.dev);
      assert.equal(await resolveRef(repo, "main", undefined, LOCAL), commits.main);
    });
    await t.step("a lightweight tag", async () => {
      assert.equal(await resolveRef(repo, "light", undefined, LOCAL), commits.light);
    });
    await t.step("an annotated tag is peeled to its commit", async () => {
      const got = await resolveRef(repo, "ann", undefined, LOCAL);
      assert.equal(got, commits.ann);
      assert.equal(got, commits.first);
      assert.notEqual(got, commits.annObject);
    });
    await t.step("a branch wins over a tag of the same name; a full ref name picks exactly", async () => {
      assert.notEqual(commits.bothBranch, commits.bothTag);
      assert.equal(await resolveRef(repo, "both", undefined, LOCAL), commits.bothBranch);
      assert.equal(await resolveRef(repo, "refs/tags/both", undefined, LOCAL), commits.bothTag);
      assert.equal(await resolveRef(repo, "refs/heads/both", undefined, LOCAL), commits.bothBranch);
      assert.equal(await resolveRef(repo, "refs/tags/ann", undefined, LOCAL), commits.ann);
    });
    await t.step("a missing ref is an actionable error", async () => {
      const err = await rejection(resolveRef(repo, "nope", undefined, LOCAL));
      assert.equal(err.reason, "NotFound");
      assert.equal(err.message, `ref nope not found in ${repo}`);
      const short = await rejection(resolveRef(repo, commits.main.slice(0, 12), undefined, LOCAL));
      assert.match(short.message, /not found in .* \(a commit must be written in full, 40 hex digits\)$/);
    });
    await t.step("a missing repository is an error", async () => {
      const err = await rejection(resolveRef(`${daemon.url}/missing.git`, "main", undefined, LOCAL));
      assert.equal(err.reason, "NotFound");
      assert.match(err.message, /^repository git:\/\/127\.0\.0\.1:\d+\/missing\.git not found/);
    });
    await t.step("an invalid ref name is refused before running git", async () => {
      for (const bad of ["-upload-pack=x", "a..b", "a b", "x*", "foo.lock"]) {
        const err = await rejection(resolveRef(repo, bad, undefined, LOCAL));
        assert.equal(err.reason, "Invalid", bad);
      }
    });
    await t.step("a new commit on main is seen", async () => {
      const next = await pushCommit(work, "third");
      assert.notEqual(next, commits.main);
      assert.equal(await resolveRef(repo, "main", undefined, LOCAL), next);
      assert.equal(await resolveRef(repo, undefined, undefined, LOCAL), next);
    });
  } finally {
    await daemon.stop();
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("a 40-hex ref is used as is, without any network", async () => {
  const sha = "0123456789abcdef0123456789abcdef01234567";
  const hung = startHungServer();
  try {
    const started = Date.now();
    assert.equal(
      await resolveRef(`git://127.0.0.1:${hung.port}/repo.git`, sha, undefined, { ...LOCAL, timeoutMs: 5_000 }),
      sha,
    );
    assert.equal(await resolveRef("git@example.com:org/repo.git", sha.toUpperCase(), undefined), sha);
    assert.ok(Date.now() - started < 1_000);
  } finally {
    await hung.stop();
  }
});

Deno.test("resolveRef over http:// with basic auth (git http-backend)", async (t) => {
  const root = await Deno.makeTempDir({ prefix: "nico-git-" });
  const { commits } = await makeRepo(root);
  const password = "s3cret-Pa55word";
  const token = "ghp_tokenTOKENtoken1234";
  const http = startHttpGit(root, { alice: password, "x-access-token": token, bob: token });
  const repo = `${http.url}/repo.git`;
  try {
    await t.step("username and password", async () => {
      const creds = credentialsFromSecret({ username: b64("alice"), password: b64(password + "\n") });
      assert.ok(!("error" in creds));
      assert.equal(await resolveRef(repo, undefined, creds, LOCAL), commits.main);
      assert.equal(await resolveRef(repo, "ann", creds, LOCAL), commits.ann);
      assert.equal(await resolveRef(repo, "light", creds, LOCAL), commits.light);
      assert.ok(http.requests.some((r) => r.startsWith("GET /repo.git/info/refs")), http.requests.join("\n"));
    });
    await t.step("a token, with the default and with an explicit username", async () => {
      const anon = credentialsFromSecret({ token: b64(token) });
      assert.deepEqual(anon, { username: "x-access-token", password: token });
      assert.equal(await resolveRef(repo, "dev", anon, LOCAL), commits.dev);
      const named = credentialsFromSecret({ token: b64(token), username: b64("bob") });
      assert.ok(!("error" in named));
      assert.equal(await resolveRef(repo, "dev", named, LOCAL), commits.dev);
    });
    await t.step("bad credentials give a clear error without the password", async () => {
      const wrong = "wrong-Pa55word-xyz";
      const err = await rejection(resolveRef(repo, "main", { username: "alice", password: wrong }, LOCAL));
      assert.equal(err.reason, "Auth");
      assert.match(err.message, /^authentication to http:\/\/127\.0\.0\.1:\d+\/repo\.git failed: check the/);
      assert.ok(!err.message.includes(wrong));
      assert.ok(!err.message.includes(b64(`alice:${wrong}`)));
      assert.ok(!err.message.includes("\n"));
    });
    await t.step("no credentials for a private repository", async () => {
      const err = await rejection(resolveRef(repo, "main", undefined, LOCAL));
      assert.equal(err.reason, "Auth");
      assert.match(err.message, /needs credentials: set credentialsRef/);
    });
    await t.step("credentials in the URL are used, and kept out of argv and messages", async () => {
      const withUser = repo.replace("http://", `http://alice:${encodeURIComponent(password)}@`);
      assert.equal(await resolveRef(withUser, "main", undefined, LOCAL), commits.main);
      const wrong = repo.replace("http://", "http://alice:hunter2hunter2@");
      const err = await rejection(resolveRef(wrong, "main", undefined, LOCAL));
      assert.equal(err.reason, "Auth");
      assert.ok(!err.message.includes("hunter2"), err.message);
      assert.equal(redactUrl(wrong), repo);
    });
    await t.step("a missing ref over http", async () => {
      const err = await rejection(resolveRef(repo, "nope", { username: "alice", password }, LOCAL));
      assert.equal(err.message, `ref nope not found in ${repo}`);
    });
  } finally {
    await http.stop();
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("credentials are not sent over plain http to a non-loopback host", async () => {
  const err = await rejection(
    resolveRef("http://git.example.invalid/repo.git", "main", { username: "u", password: "topsecret" }, {
      allowedHosts: parseHostPolicy("git.example.invalid"),
    }),
  );
  assert.equal(err.reason, "Unsupported");
  assert.equal(
    err.message,
    "refusing to send credentials over plain http to http://git.example.invalid/repo.git: use an https:// gitRepo",
  );
});

Deno.test("SSH URLs and SSH-only Secrets are refused with a clear error", async () => {
  for (const url of ["ssh://git@example.com/org/repo.git", "git@example.com:org/repo.git", "example.com:repo"]) {
    assert.ok(isSshUrl(url), url);
    const err = await rejection(resolveRef(url, "main", undefined));
    assert.equal(err.reason, "Unsupported");
    assert.ok(err.message.includes(SSH_UNSUPPORTED), err.message);
    assert.match(err.message, /set ref to a 40-hex commit/);
  }
  assert.ok(!isSshUrl("https://example.com/org/repo.git"));
  const key = "-----BEGIN OPENSSH PRIVATE KEY-----\nabc\n";
  assert.deepEqual(credentialsFromSecret({ "ssh-privatekey": b64(key) }), { error: SSH_UNSUPPORTED });
  assert.deepEqual(credentialsFromSecret({ identity: b64(key) }), { error: SSH_UNSUPPORTED });
  const other = await rejection(resolveRef("file:///etc/repo.git", "main", undefined));
  assert.equal(other.reason, "Refused");
  assert.match(other.message, /local paths and file:\/\/ are not allowed/);
});

Deno.test("credentialsFromSecret reads token or username/password and never echoes values", () => {
  assert.deepEqual(credentialsFromSecret({ token: b64(" tok\n") }), { username: "x-access-token", password: "tok" });
  assert.deepEqual(credentialsFromSecret({ token: b64("tok"), username: b64("me") }), {
    username: "me",
    password: "tok",
  });
  assert.deepEqual(credentialsFromSecret({ username: b64("me\n"), password: b64("p w\r\n") }), {
    username: "me",
    password: "p w",
  });
  // A token wins over an SSH key in the same Secret.
  assert.deepEqual(credentialsFromSecret({ token: b64("tok"), "ssh-privatekey": b64("k") }), {
    username: "x-access-token",
    password: "tok",
  });
  const errors = [
    credentialsFromSecret({}),
    credentialsFromSecret({ password: b64("lonely-password") }),
    credentialsFromSecret({ username: b64("me") }),
    credentialsFromSecret({ token: "!!!not-base64!!!" }),
    credentialsFromSecret({ token: b64("  ") }),
    credentialsFromSecret({ username: b64("a:b"), password: b64("lonely-password") }),
  ];
  for (const e of errors) {
    assert.ok("error" in e, JSON.stringify(e));
    assert.ok(!e.error.includes("lonely-password") && !e.error.includes("!!!"), e.error);
  }
  assert.match((errors[0] as { error: string }).error, /expected key token, or keys username and password/);
  assert.equal(basicAuthorization({ username: "a", password: "b" }), `Basic ${btoa("a:b")}`);
});

Deno.test("the timeout kills git when the server never answers", async (t) => {
  const hung = startHungServer();
  try {
    for (const scheme of ["http", "git"]) {
      await t.step(scheme, async () => {
        const url = `${scheme}://127.0.0.1:${hung.port}/repo.git`;
        const started = Date.now();
        const err = await rejection(resolveRef(url, "main", undefined, { ...LOCAL, timeoutMs: 300 }));
        const took = Date.now() - started;
        assert.equal(err.reason, "Timeout");
        assert.equal(err.message, `git ls-remote ${url} timed out after 300ms`);
        assert.ok(took >= 290 && took < 2_000, `took ${took} ms: git or its helper outlived the kill`);
        await waitFor("git and its helpers to exit", () => processesMentioning(url).length === 0, 5_000);
      });
    }
    await t.step("credentials reach git through its environment, never its argv", async () => {
      const url = `http://127.0.0.1:${hung.port}/private.git`;
      const creds = { username: "alice", password: "pa55-in-env-only" };
      const ctl = new AbortController();
      const p = rejection(resolveRef(url, "main", creds, { ...LOCAL, signal: ctl.signal, timeoutMs: 60_000 }));
      try {
        const pids = await waitFor("git to start", () => {
          const found = processesMentioning(url);
          return found.length > 0 && found;
        }, 5_000);
        const header = basicAuthorization(creds);
        for (const pid of pids) {
          const argv = Deno.readTextFileSync(`/proc/${pid}/cmdline`);
          assert.ok(!argv.includes(creds.password) && !argv.includes(header.slice(6)), argv);
        }
        const environ = Deno.readTextFileSync(`/proc/${pids[0]}/environ`).split("\0");
        assert.ok(
          environ.includes(`GIT_CONFIG_VALUE_1=Authorization: ${header}`),
          "the header is set through GIT_CONFIG_*",
        );
        assert.ok(environ.includes("GIT_TERMINAL_PROMPT=0") && environ.includes("GIT_CONFIG_GLOBAL=/dev/null"));
      } finally {
        ctl.abort();
        await p;
      }
    });
    await t.step("an abort signal kills git too", async () => {
      const url = `http://127.0.0.1:${hung.port}/other.git`;
      const ctl = new AbortController();
      const p = rejection(resolveRef(url, "main", undefined, { ...LOCAL, signal: ctl.signal, timeoutMs: 60_000 }));
      const before = hung.accepted();
      await waitFor("git's http helper to connect", () => hung.accepted() > before, 5_000);
      const aborted = Date.now();
      ctl.abort();
      const err = await p;
      assert.equal(err.reason, "Cancelled");
      assert.ok(Date.now() - aborted < 2_000, "git and its helper die at once");
      await waitFor("git and its helpers to exit", () => processesMentioning(url).length === 0, 5_000);
    });
  } finally {
    await hung.stop();
  }
});
