/**
 * What the Git tests share (tests/integration/git*_test.ts): git run with no user or system config, a repository
 * with known commits served by `git daemon` (serveGitDaemon) or by `git http-backend` behind a small HTTP server
 * that requires basic auth, a server that accepts and never answers, and a look at the processes left behind.
 */
import { eventually } from "../testing/helpers.ts";
import assert from "node:assert/strict";
import { basicAuthorization } from "../lib/git/credentials.ts";
import { ResolveError } from "../lib/git/resolve.ts";
import { parseHostPolicy } from "../lib/git/hosts.ts";

/** Tests serve git on loopback, which NICO refuses unless --git-allowed-hosts lists it. */
export const LOCAL = { allowedHosts: parseHostPolicy("127.0.0.1") };
export const GIT_ENV = { GIT_CONFIG_NOSYSTEM: "1", GIT_CONFIG_GLOBAL: "/dev/null", LC_ALL: "C" };
export const ID = ["-c", "user.name=t", "-c", "user.email=t@t"];

/** Runs git in `cwd` and returns its trimmed stdout; throws with stderr on failure. */
export async function git(cwd: string, ...args: string[]): Promise<string> {
  const out = await new Deno.Command("git", { args, cwd, env: GIT_ENV, stdin: "null" }).output();
  const text = new TextDecoder();
  if (!out.success) throw new Error(`git ${args.join(" ")}: ${text.decode(out.stderr)}`);
  return text.decode(out.stdout).trim();
}

/** Polls `fn` (every 10 ms) until it returns something other than `undefined`/`false`, failing after `timeoutMs`. */
export function waitFor<T>(what: string, fn: () => T | undefined | false, timeoutMs = 10_000): Promise<T> {
  return eventually(what, fn, timeoutMs, 10);
}

export async function rejection(p: Promise<unknown>): Promise<ResolveError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof ResolveError, `expected a ResolveError, got ${err}`);
    return err;
  }
  assert.fail("expected a rejection");
}

/** The commits of the test repository, by what points at them. */
export interface Commits {
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
export async function makeRepo(root: string): Promise<{ work: string; commits: Commits }> {
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
export async function pushCommit(work: string, message: string): Promise<string> {
  await git(work, ...ID, "commit", "-q", "--allow-empty", "-m", message);
  await git(work, "push", "-q", `${work}/../repo.git`, "main");
  return await git(work, "rev-parse", "HEAD");
}

/** Splits CGI output into its headers and body. */
export function parseCgi(
  out: Uint8Array<ArrayBuffer>,
): { status: number; headers: Headers; body: Uint8Array<ArrayBuffer> } {
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
export function startHttpGit(
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
export function startHungServer(): { port: number; accepted(): number; stop(): Promise<void> } {
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
export function processesMentioning(needle: string): number[] {
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

export function b64(s: string): string {
  return btoa(String.fromCharCode(...new TextEncoder().encode(s)));
}
