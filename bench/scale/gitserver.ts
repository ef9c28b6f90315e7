/**
 * Local Git repositories served over "dumb" HTTP on loopback, so NICO's ref
 * resolution (`git ls-remote`, default on) works as it would against a real
 * remote, without leaving the machine. Each repository has one empty commit
 * on `main`, which HEAD points to.
 *
 * @module
 */

async function git(args: string[], cwd: string): Promise<string> {
  const out = await new Deno.Command("git", {
    args,
    cwd,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    env: {
      GIT_AUTHOR_NAME: "bench",
      GIT_AUTHOR_EMAIL: "bench@example.test",
      GIT_COMMITTER_NAME: "bench",
      GIT_COMMITTER_EMAIL: "bench@example.test",
      GIT_CONFIG_GLOBAL: "/dev/null",
      GIT_CONFIG_NOSYSTEM: "1",
    },
  }).output();
  const dec = new TextDecoder();
  if (!out.success) throw new Error(`git ${args.join(" ")}: ${dec.decode(out.stderr).trim()}`);
  return dec.decode(out.stdout).trim();
}

export interface GitServer {
  /** `http://127.0.0.1:<port>/<name>.git` */
  url(name: string): string;
  stop(): Promise<void>;
}

/** Creates bare repositories `names` under `dir` and serves `dir` read-only over HTTP on 127.0.0.1. */
export async function startGitServer(dir: string, names: string[]): Promise<GitServer> {
  for (const name of names) {
    const repo = `${dir}/${name}.git`;
    await Deno.mkdir(repo, { recursive: true });
    await git(["init", "--quiet", "--bare", "."], repo);
    const tree = await git(["hash-object", "-t", "tree", "-w", "--stdin"], repo).catch(() => git(["mktree"], repo));
    const commit = await git(["commit-tree", tree, "-m", `${name}: initial`], repo);
    await git(["update-ref", "refs/heads/main", commit], repo);
    await git(["symbolic-ref", "HEAD", "refs/heads/main"], repo);
    await git(["update-server-info"], repo);
  }
  const abort = new AbortController();
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, signal: abort.signal, onListen() {} }, async (req) => {
    const path = decodeURIComponent(new URL(req.url).pathname);
    if (req.method !== "GET" || path.includes("..")) return new Response("no\n", { status: 400 });
    try {
      return new Response(await Deno.readFile(`${dir}${path}`), { headers: { "content-type": "text/plain" } });
    } catch {
      return new Response("not found\n", { status: 404 });
    }
  });
  const port = server.addr.port;
  return {
    url: (name) => `http://127.0.0.1:${port}/${name}.git`,
    async stop() {
      abort.abort();
      await server.finished;
    },
  };
}
