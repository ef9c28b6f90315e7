/**
 * Resolving `ref` to a commit against real Git servers on loopback: `git
 * daemon` for anonymous git://, and `git http-backend` behind a small HTTP
 * server that requires basic auth.
 */
import { serveGitDaemon } from "../../testing/git_server.ts";
import { eventually } from "../../testing/helpers.ts";
import assert from "node:assert/strict";
import { basicAuthorization, credentialsFromSecret, SSH_UNSUPPORTED } from "../../lib/git/credentials.ts";
import { ResolveError, resolveRef } from "../../lib/git/resolve.ts";
import { type RevisionKey, revisionKey, RevisionResolver } from "../../lib/git/resolver.ts";
import { isSshUrl, redactUrl } from "../../lib/git/url.ts";
import { parseHostPolicy } from "../../lib/git/hosts.ts";

/** Tests serve git on loopback, which NICO refuses unless --git-allowed-hosts lists it. */
const LOCAL = { allowedHosts: parseHostPolicy("127.0.0.1") };
const GIT_ENV = { GIT_CONFIG_NOSYSTEM: "1", GIT_CONFIG_GLOBAL: "/dev/null", LC_ALL: "C" };
const ID = ["-c", "user.name=t", "-c", "user.email=t@t"];

/** Runs git in `cwd` and returns its trimmed stdout; throws with stderr on failure. */
async function git(cwd: string, ...args: string[]): Promise<string> {
  const out = await new Deno.Command("git", { args, cwd, env: GIT_ENV, stdin: "null" }).output();
  const text = new TextDecoder();
  if (!out.success) throw new Error(`git ${args.join(" ")}: ${text.decode(out.stderr)}`);
  return text.decode(out.stdout).trim();
}

/** Polls `fn` (every 10 ms) until it returns something other than `undefined`/`false`, failing after `timeoutMs`. */
function waitFor<T>(what: string, fn: () => T | undefined | false, timeoutMs = 10_000): Promise<T> {
  return eventually(what, fn, timeoutMs, 10);
}

async function rejection(p: Promise<unknown>): Promise<ResolveError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof ResolveError, `expected a ResolveError, got ${err}`);
    return err;
  }
  assert.fail("expected a rejection");
}

/** The commits of the test repository, by what points at them. */
interface Commits {
  first: string;
  main: string;
  dev: string;
  light: string;
  annObject: string;
  ann: string;
  bothBranch: string;
  bothTag: string;
}

/**
 * A bare repository `repo.git` under `root` whose default branch is main:
 * main (2 commits), branch dev, lightweight tag light, annotated tag ann (on
 * the first commit), and a branch and a tag both named `both`.
 */
async function makeRepo(root: string): Promise<{ work: string; commits: Commits }> {
  const bare = `${root}/repo.git`;
  const work = `${root}/work`;
  await git(root, "init", "-q", "--bare", "--initial-branch=main", bare);
  await git(root, "init", "-q", "--initial-branch=main", work);
  await git(work, ...ID, "commit", "-q", "--allow-empty", "-m", "first");
  const first = await git(work, "rev-parse", "HEAD");
  await git(work, ...ID, "tag", "-a", "ann", "-m", "annotated");
  await git(work, "tag", "both");
  await git(work, ...ID, "commit", "-q", "--allow-empty", "-m", "second");
  await git(work, "tag", "light");
  await git(work, "checkout", "-q", "-b", "dev");
  await git(work, ...ID, "commit", "-q", "--allow-empty", "-m", "on dev");
  await git(work, "checkout", "-q", "-b", "both");
  await git(work, ...ID, "commit", "-q", "--allow-empty", "-m", "on both");
  await git(work, "checkout", "-q", "main");
  await git(work, "push", "-q", bare, "--all");
  await git(work, "push", "-q", bare, "--tags");
  const rev = (r: string) => git(work, "rev-parse", r);
  return {
    work,
    commits: {
      first,
      main: await rev("main"),
      dev: await rev("dev"),
      light: await rev("light"),
      annObject: await rev("refs/tags/ann"),
      ann: await rev("ann^{commit}"),
      bothBranch: await rev("refs/heads/both"),
      bothTag: await rev("refs/tags/both"),
    },
  };
}

/** Commits on main in `work` and pushes it; the new commit. */
async function pushCommit(work: string, message: string): Promise<string> {
  await git(work, ...ID, "commit", "-q", "--allow-empty", "-m", message);
  await git(work, "push", "-q", `${work}/../repo.git`, "main");
  return await git(work, "rev-parse", "HEAD");
}

/** Splits CGI output into its headers and body. */
function parseCgi(out: Uint8Array<ArrayBuffer>): { status: number; headers: Headers; body: Uint8Array<ArrayBuffer> } {
  let end = -1;
  let skip = 0;
  for (let i = 0; i < out.length; i++) {
    if (out[i] === 10 && out[i + 1] === 10) [end, skip] = [i, 2];
    else if (out[i] === 13 && out[i + 1] === 10 && out[i + 2] === 13 && out[i + 3] === 10) [end, skip] = [i, 4];
    if (end >= 0) break;
  }
  if (end < 0) throw new Error("CGI output has no header end");
  const headers = new Headers();
  let status = 200;
  for (const line of new TextDecoder().decode(out.subarray(0, end)).split(/\r?\n/)) {
    const i = line.indexOf(":");
    if (i < 0) continue;
    const name = line.slice(0, i).trim();
    const value = line.slice(i + 1).trim();
    if (name.toLowerCase() === "status") status = Number.parseInt(value, 10);
    else headers.append(name, value);
  }
  return { status, headers, body: out.subarray(end + skip) };
}

/** An HTTP server that requires basic auth by one of `users` and runs `git http-backend` for repositories under `root`. */
function startHttpGit(
  root: string,
  users: Record<string, string>,
): { url: string; requests: string[]; stop(): Promise<void> } {
  const requests: string[] = [];
  const allowed = new Map(Object.entries(users).map(([u, p]) => [basicAuthorization({ username: u, password: p }), u]));
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const url = new URL(req.url);
    requests.push(`${req.method} ${url.pathname}${url.search}`);
    const user = allowed.get(req.headers.get("authorization") ?? "");
    if (!user) {
      return new Response("unauthorized\n", { status: 401, headers: { "WWW-Authenticate": 'Basic realm="git"' } });
    }
    const env: Record<string, string> = {
      ...GIT_ENV,
      PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
      GIT_PROJECT_ROOT: root,
      GIT_HTTP_EXPORT_ALL: "1",
      PATH_INFO: url.pathname,
      REQUEST_METHOD: req.method,
      QUERY_STRING: url.search.slice(1),
      CONTENT_TYPE: req.headers.get("content-type") ?? "",
      REMOTE_USER: user,
      REMOTE_ADDR: "127.0.0.1",
    };
    const protocol = req.headers.get("git-protocol");
    if (protocol) env.GIT_PROTOCOL = protocol;
    const encoding = req.headers.get("content-encoding");
    if (encoding) env.HTTP_CONTENT_ENCODING = encoding;
    const body = new Uint8Array(await req.arrayBuffer());
    env.CONTENT_LENGTH = String(body.length);
    const child = new Deno.Command("git", {
      args: ["http-backend"],
      clearEnv: true,
      env,
      stdin: "piped",
      stdout: "piped",
      stderr: "null",
    }).spawn();
    const writer = child.stdin.getWriter();
    await writer.write(body);
    await writer.close();
    const out = await child.output();
    const cgi = parseCgi(out.stdout);
    return new Response(cgi.body, { status: cgi.status, headers: cgi.headers });
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    requests,
    stop: () => server.shutdown(),
  };
}

/** A TCP listener that accepts connections and never answers. */
function startHungServer(): { port: number; accepted(): number; stop(): Promise<void> } {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const conns: Deno.Conn[] = [];
  const accepting = (async () => {
    try {
      for await (const conn of listener) conns.push(conn);
    } catch { /* closed */ }
  })();
  return {
    port: (listener.addr as Deno.NetAddr).port,
    accepted: () => conns.length,
    async stop() {
      listener.close();
      await accepting;
      for (const c of conns) {
        try {
          c.close();
        } catch { /* already closed */ }
      }
    },
  };
}

/** Process ids whose command line mentions `needle` (to prove git and its helpers are gone). */
function processesMentioning(needle: string): number[] {
  const pids: number[] = [];
  for (const e of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(e.name)) continue;
    try {
      const cmdline = Deno.readTextFileSync(`/proc/${e.name}/cmdline`).replaceAll("\0", " ");
      if (cmdline.includes(needle)) pids.push(Number(e.name));
    } catch { /* exited */ }
  }
  return pids;
}

function b64(s: string): string {
  return btoa(String.fromCharCode(...new TextEncoder().encode(s)));
}

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
