/**
 * Resolves a branch, tag or the default branch of a remote repository to a
 * commit with `git ls-remote`.
 *
 * Git runs with a clean environment (no user or system config, no prompts,
 * no credential helpers, no `~/.netrc`), may only speak https, http and git,
 * and is killed after a timeout. Credentials travel as an `Authorization`
 * header set through `GIT_CONFIG_*` environment variables, never in argv;
 * messages show the URL without userinfo and never a secret. Git runs in its
 * own process group so that a timeout kills its transport helpers as well.
 *
 * @module
 */

import { basicAuthorization, type Creds } from "./credentials.ts";
import { DEFAULT_HOST_POLICY, type HostPolicy } from "./hosts.ts";
import { gitRepoProblem, isCommit, parseRemoteUrl, redactUrl, refNameProblem } from "./url.ts";

/** Options of {@link resolveRef}. */
export interface ResolveOptions {
  /** Kill git after this long (default 30 s). */
  timeoutMs?: number;
  /** Kills git when aborted. */
  signal?: AbortSignal;
  /** Hosts `url` may name (`--git-allowed-hosts`); default: public hosts only. */
  allowedHosts?: HostPolicy;
}

/** Why {@link resolveRef} failed. */
export type ResolveFailure =
  | "Invalid"
  | "Unsupported"
  | "Refused"
  | "NotFound"
  | "Auth"
  | "Unreachable"
  | "Timeout"
  | "Cancelled"
  | "Failed";

/**
 * A failure of {@link resolveRef}. `message` is one line, holds no secret and
 * no text from the remote (it goes into status); `detail`, for the log only,
 * is git's own error with secrets and userinfo removed.
 */
export class ResolveError extends Error {
  override name = "ResolveError";
  constructor(readonly reason: ResolveFailure, message: string, readonly detail?: string) {
    super(message);
  }
}

const DEFAULT_TIMEOUT_MS = 30_000;
/** After SIGTERM, git gets this long to stop its helpers before SIGKILL. */
const KILL_GRACE_MS = 2_000;
const PASS_THROUGH_ENV = [
  "HTTPS_PROXY",
  "https_proxy",
  "HTTP_PROXY",
  "http_proxy",
  "NO_PROXY",
  "no_proxy",
  "ALL_PROXY",
  "all_proxy",
  "SSL_CERT_FILE",
  "SSL_CERT_DIR",
  "GIT_SSL_CAINFO",
  "GIT_SSL_CAPATH",
];

/**
 * The commit `ref` names in the repository at `url`: `undefined` or `"HEAD"`
 * is the remote's default branch; a name is first an exact branch
 * (`refs/heads/<ref>`), then a tag (`refs/tags/<ref>`, annotated tags peeled
 * to their commit); a full `refs/...` name matches only itself. A ref that
 * already is a 40-hex commit is returned (lowercased) without any network.
 *
 * `creds` are sent as HTTP basic auth over https (over http only to a
 * loopback host). SSH URLs are refused: SSH credentials are not supported
 * for revision pinning yet. Throws {@link ResolveError}.
 */
export async function resolveRef(
  url: string,
  ref: string | undefined,
  creds: Creds | undefined,
  opts: ResolveOptions = {},
): Promise<string> {
  const refused = gitRepoProblem(url, opts.allowedHosts ?? DEFAULT_HOST_POLICY, { allowCredentials: true });
  if (refused) throw new ResolveError("Refused", `gitRepo ${redactUrl(url)} is refused: ${refused}`);
  if (ref !== undefined && isCommit(ref)) return ref.toLowerCase();
  const remote = parse(url);
  const shown = remote.url;
  const auth = creds ?? remote.userinfo;
  if (auth && remote.protocol === "http:" && !remote.loopback) {
    throw new ResolveError(
      "Unsupported",
      `refusing to send credentials over plain http to ${shown}: use an https:// gitRepo`,
    );
  }
  const name = ref === undefined || ref === "HEAD" ? undefined : ref;
  if (name !== undefined) {
    const problem = refNameProblem(name);
    if (problem) throw new ResolveError("Invalid", problem);
  }
  const candidates = name === undefined
    ? ["HEAD"]
    : name.startsWith("refs/")
    ? [name]
    : [`refs/heads/${name}`, `refs/tags/${name}`];
  const patterns = candidates.flatMap((c) => c.startsWith("refs/tags/") ? [c, `${c}^{}`] : [c]);
  const secrets = auth ? [auth.password, basicAuthorization(auth)] : [];
  const header = auth && remote.protocol !== "git:" ? `Authorization: ${basicAuthorization(auth)}` : undefined;
  const out = await lsRemote(shown, patterns, header, secrets, opts);
  const refs = parseLsRemote(out);
  for (const c of candidates) {
    const commit = refs.get(`${c}^{}`) ?? refs.get(c);
    if (commit) return commit;
  }
  if (name === undefined) {
    throw new ResolveError("NotFound", `the default branch (HEAD) of ${shown} has no commit: push one, or set ref`);
  }
  const hint = /^[0-9a-f]{4,39}$/i.test(name) ? " (a commit must be written in full, 40 hex digits)" : "";
  throw new ResolveError("NotFound", `ref ${name} not found in ${shown}${hint}`);
}

function parse(url: string) {
  try {
    return parseRemoteUrl(url);
  } catch (err) {
    const message = (err as Error).message;
    throw new ResolveError(message.includes("not a valid URL") ? "Invalid" : "Unsupported", message);
  }
}

/** `<ref> -> <commit>` from `git ls-remote` output. */
export function parseLsRemote(out: string): Map<string, string> {
  const refs = new Map<string, string>();
  for (const line of out.split("\n")) {
    const [commit, ref, extra] = line.trim().split("\t");
    if (commit && ref && extra === undefined && isCommit(commit) && !/\s/.test(ref)) refs.set(ref, commit);
  }
  return refs;
}

function gitEnv(header: string | undefined, timeoutMs: number): Record<string, string> {
  const env: Record<string, string> = {
    PATH: Deno.env.get("PATH") ?? "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    HOME: "/nonexistent",
    LC_ALL: "C",
    GIT_TERMINAL_PROMPT: "0",
    GIT_ASKPASS: "",
    SSH_ASKPASS: "",
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_CONFIG_GLOBAL: "/dev/null",
    GIT_ALLOW_PROTOCOL: "https:http:git",
    GIT_PROTOCOL_FROM_USER: "0",
    // curl gives up on a stalled transfer by itself too, a little after our timeout.
    GIT_HTTP_LOW_SPEED_LIMIT: "1",
    GIT_HTTP_LOW_SPEED_TIME: String(Math.ceil(timeoutMs / 1000) + 5),
  };
  for (const k of PASS_THROUGH_ENV) {
    const v = Deno.env.get(k);
    if (v !== undefined) env[k] = v;
  }
  const config: [string, string][] = [["credential.helper", ""]];
  if (header) config.push(["http.extraHeader", header]);
  // No redirects: a public host must not send git on to an address --git-allowed-hosts refuses.
  config.push(["http.followRedirects", "false"]);
  env.GIT_CONFIG_COUNT = String(config.length);
  config.forEach(([k, v], i) => {
    env[`GIT_CONFIG_KEY_${i}`] = k;
    env[`GIT_CONFIG_VALUE_${i}`] = v;
  });
  return env;
}

async function lsRemote(
  url: string,
  patterns: string[],
  header: string | undefined,
  secrets: string[],
  opts: ResolveOptions,
): Promise<string> {
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  if (opts.signal?.aborted) throw new ResolveError("Cancelled", `git ls-remote ${url} was cancelled`);
  let child: Deno.ChildProcess;
  try {
    child = new Deno.Command("git", {
      args: ["ls-remote", "--end-of-options", url, ...patterns],
      clearEnv: true,
      env: gitEnv(header, timeoutMs),
      cwd: "/",
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
      // Its own process group, so a kill reaches the helpers (git-remote-https) too.
      detached: true,
    }).spawn();
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) {
      throw new ResolveError("Failed", "git is not installed: NICO needs the git CLI to resolve ref");
    }
    throw new ResolveError("Failed", `cannot run git: ${(err as Error).message}`);
  }
  let stopped: "Timeout" | "Cancelled" | undefined;
  let killTimer: ReturnType<typeof setTimeout> | undefined;
  const signalGroup = (signal: Deno.Signal) => {
    try {
      Deno.kill(-child.pid, signal);
    } catch {
      try {
        child.kill(signal);
      } catch { /* already exited */ }
    }
  };
  const kill = (why: "Timeout" | "Cancelled") => {
    if (stopped) return;
    stopped = why;
    signalGroup("SIGTERM");
    killTimer = setTimeout(() => signalGroup("SIGKILL"), KILL_GRACE_MS);
  };
  const timer = setTimeout(() => kill("Timeout"), timeoutMs);
  const onAbort = () => kill("Cancelled");
  opts.signal?.addEventListener("abort", onAbort, { once: true });
  let result: Deno.CommandOutput;
  try {
    result = await child.output();
  } finally {
    clearTimeout(timer);
    clearTimeout(killTimer);
    opts.signal?.removeEventListener("abort", onAbort);
  }
  if (stopped === "Timeout") {
    throw new ResolveError("Timeout", `git ls-remote ${url} timed out after ${seconds(timeoutMs)}`);
  }
  if (stopped === "Cancelled") throw new ResolveError("Cancelled", `git ls-remote ${url} was cancelled`);
  const stdout = new TextDecoder().decode(result.stdout);
  if (result.success) return stdout;
  throw failure(url, new TextDecoder().decode(result.stderr), secrets, header !== undefined);
}

function seconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`;
}

/** A one-line error for git's stderr, with every secret and any URL userinfo removed. */
function failure(url: string, stderr: string, secrets: string[], sentCreds: boolean): ResolveError {
  if (/Authentication failed|could not read (Username|Password)|returned error: 401/i.test(stderr)) {
    return new ResolveError(
      "Auth",
      sentCreds
        ? `authentication to ${url} failed: check the username and token/password in the credentialsRef Secret`
        : `${url} needs credentials: set credentialsRef to a Secret with a token, or username and password`,
    );
  }
  if (/returned error: 403/.test(stderr)) {
    return new ResolveError("Auth", `access to ${url} is forbidden (HTTP 403): check the credentials' permissions`);
  }
  if (
    /repository '.*' not found|not found: did you run git update-server-info|repository not exported|does not appear to be a git repository/i
      .test(stderr)
  ) {
    return new ResolveError(
      "NotFound",
      `repository ${url} not found${sentCreds ? "" : " (a private one needs credentialsRef)"}`,
    );
  }
  const lines = stderr.split("\n").map((l) => l.trim()).filter((l) => l && !l.startsWith("hint:"));
  const fatal = lines.filter((l) => /^(fatal|error):/.test(l));
  let detail = (fatal.length ? fatal : lines).join(" ").replace(/\s+/g, " ").replace(/^(fatal|error): /, "");
  for (const s of secrets) if (s) detail = detail.split(s).join("[redacted]");
  detail = detail.replace(/\b([a-z][a-z0-9+.-]*:\/\/)[^\s/@']*@/gi, "$1");
  if (detail.length > 300) detail = `${detail.slice(0, 297)}...`;
  const [reason, what] = classify(stderr);
  return new ResolveError(reason, `git ls-remote ${redactUrl(url)} failed: ${what}`, detail || "no error output");
}

/** What went wrong, in NICO's words: status never repeats what the remote said. */
function classify(stderr: string): [ResolveFailure, string] {
  if (
    /could not resolve host|unable to look up|name or service not known|temporary failure in name resolution/i.test(
      stderr,
    )
  ) {
    return ["Unreachable", "could not resolve the repository's host name"];
  }
  if (
    /connection refused|failed to connect|couldn't connect|no route to host|network is unreachable|unable to connect|connection timed out|timed out/i
      .test(stderr)
  ) {
    return ["Unreachable", "could not reach the repository"];
  }
  if (/ssl|tls|certificate|gnutls/i.test(stderr)) {
    return ["Unreachable", "the TLS connection to the repository failed (certificate or protocol)"];
  }
  if (/redirect|returned error: 30\d/i.test(stderr)) {
    return ["Failed", "the server answered with a redirect, which NICO does not follow"];
  }
  if (/returned error: 5\d\d/.test(stderr)) return ["Failed", "the repository server answered with an error"];
  return ["Failed", "the server did not answer like a Git repository"];
}
