/**
 * Checks on a `gitRepo` URL and a `ref` before NICO hands them to git.
 *
 * @module
 */

import { type Creds, SSH_UNSUPPORTED } from "./credentials.ts";
import { hostAllowance, type HostPolicy, hostProblem } from "./hosts.ts";

/** A commit id: 40 hex digits (SHA-1) or 64 (SHA-256). */
export const COMMIT_RE = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/i;

/** Whether `ref` already names a commit, so it needs no resolving. */
export function isCommit(ref: string | undefined): boolean {
  return ref !== undefined && COMMIT_RE.test(ref);
}

/** A repository URL git may be pointed at, with any userinfo taken out. */
export interface RemoteUrl {
  /** The URL without userinfo: what git gets and what messages show. */
  url: string;
  /** `https:`, `http:` or `git:`. */
  protocol: "https:" | "http:" | "git:";
  /** Whether the host is loopback (`localhost`, 127.0.0.0/8, `::1`). */
  loopback: boolean;
  /** Credentials that were written into the URL as `user:password@`. */
  userinfo?: Creds;
}

const SCP_LIKE = /^(?:[^@/:]+@)?(?:\[[^\]]+\]|[^/:]+):(?!\/\/)/;

/** Whether `url` reaches the repository over SSH (`ssh://`, `git+ssh://` or scp-like `git@host:path`). */
export function isSshUrl(url: string): boolean {
  if (/^(?:ssh|git\+ssh|ssh\+git):\/\//i.test(url)) return true;
  return !url.includes("://") && SCP_LIKE.test(url);
}

/** `url` with any `user:password@` removed, for messages and logs; unparsable URLs become a placeholder. */
export function redactUrl(url: string): string {
  if (isSshUrl(url)) return url.replace(/^([a-z+]+:\/\/)?[^@/]*@/i, "$1");
  try {
    const u = new URL(url);
    u.username = "";
    u.password = "";
    return u.toString();
  } catch {
    return "<invalid URL>";
  }
}

function isLoopback(hostname: string): boolean {
  return hostname === "localhost" || hostname === "[::1]" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname);
}

/**
 * Parses a `gitRepo` URL that revision pinning can use: `https://`,
 * `http://` or `git://`. Throws an `Error` with a one-line message for SSH
 * URLs, other schemes and local paths.
 */
export function parseRemoteUrl(url: string): RemoteUrl {
  if (isSshUrl(url)) throw new Error(`cannot resolve ref of ${redactUrl(url)}: ${SSH_UNSUPPORTED}`);
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new Error("gitRepo is not a valid URL: use https://host/path");
  }
  const protocol = u.protocol;
  if (protocol !== "https:" && protocol !== "http:" && protocol !== "git:") {
    throw new Error(
      `cannot resolve ref of ${
        redactUrl(url)
      }: scheme ${protocol} is not supported for revision pinning (use https://, http:// or git://), or set ref to a 40-hex commit`,
    );
  }
  if (!u.hostname) throw new Error(`gitRepo ${redactUrl(url)} has no host`);
  let userinfo: Creds | undefined;
  if (u.username || u.password) {
    try {
      userinfo = { username: decodeURIComponent(u.username), password: decodeURIComponent(u.password) };
    } catch {
      throw new Error(`gitRepo ${redactUrl(url)} has badly encoded credentials`);
    }
    u.username = "";
    u.password = "";
  }
  return {
    url: u.toString(),
    protocol,
    loopback: isLoopback(u.hostname),
    ...(userinfo ? { userinfo } : {}),
  };
}

const SCHEMES = new Set(["https:", "http:", "git:", "ssh:", "git+ssh:", "ssh+git:"]);

/**
 * User, host and port of an scp-like `[user@]host:path`, read as git reads
 * it: a bracketed host is an IPv6 address (`[::1]`, zone id allowed) or a
 * host and a port (`[127.0.0.9:18999]` is host 127.0.0.9, port 18999).
 *
 * @example
 * ```ts
 * import { scpParts } from "./url.ts";
 * scpParts("git@[127.0.0.9:18999]:x"); // { user: "git", host: "127.0.0.9", port: "18999" }
 * scpParts("git@[::1]:x"); // { user: "git", host: "::1" }
 * ```
 */
export function scpParts(url: string): { user: string; host: string; port?: string } | undefined {
  const m = /^(?:([^@/:]+)@)?(\[[^\]/]*\]|[^/:[\]]+):(?!\/\/)/.exec(url);
  if (!m) return undefined;
  const user = m[1] ?? "";
  const host = m[2]!;
  if (!host.startsWith("[")) return { user, host };
  const inner = host.slice(1, -1);
  const hostPort = /^([^:]*):(\d*)$/.exec(inner);
  return hostPort ? { user, host: hostPort[1]!, port: hostPort[2]! } : { user, host: inner };
}

/** Host and userinfo of a URL-form or scp-like `gitRepo`, or `undefined` when it is neither. */
function split(url: string): { scheme: string; host: string; user: string; password: string } | undefined {
  if (!url.includes("://")) {
    const p = scpParts(url);
    return p ? { scheme: "ssh:", host: p.host, user: p.user, password: "" } : undefined;
  }
  try {
    const u = new URL(url);
    return { scheme: u.protocol, host: u.hostname, user: u.username, password: u.password };
  } catch {
    return undefined;
  }
}

/**
 * Why NICO refuses `url` as a `gitRepo`, or `undefined` when it may be
 * used: one line that never repeats a password. Refused: more than one line,
 * spaces or control characters, values that look like a git option (`-…`),
 * remote-helper syntax (`ext::…`), local paths and `file://`, schemes other
 * than https, ssh, git (http only to a host listed by name in `policy`),
 * credentials in the URL (unless `allowCredentials`: NICO's own resolver
 * still accepts them), and hosts `policy` does not allow.
 */
export function gitRepoProblem(
  url: string,
  policy: HostPolicy,
  opts: { allowCredentials?: boolean } = {},
): string | undefined {
  // deno-lint-ignore no-control-regex
  if (/[\x00-\x20\x7f]/.test(url)) {
    return "must be one line without spaces or control characters; write the repository URL alone";
  }
  if (url.startsWith("-")) return "must not start with '-' (git would read it as an option); use https://host/path";
  if (/^[A-Za-z0-9+.-]+::/.test(url)) {
    return "git remote-helper syntax (such as ext::) runs commands and is not allowed; use https://host/path";
  }
  if (/^file:/i.test(url) || /^[./~]/.test(url)) {
    return "local paths and file:// are not allowed: NICO and NIO fetch from a Git server; use https://host/path";
  }
  const parts = split(url);
  if (!parts || !parts.host) {
    return "is not a repository URL: use https://host/path.git, ssh://git@host/path.git or git@host:path.git";
  }
  if (!SCHEMES.has(parts.scheme.toLowerCase())) {
    return `scheme ${parts.scheme} is not allowed: use https://, ssh:// or git://`;
  }
  const ssh = parts.scheme !== "https:" && parts.scheme !== "http:" && parts.scheme !== "git:";
  if (!opts.allowCredentials && (parts.password || (!ssh && parts.user))) {
    return "must not carry credentials (user:password@ or a token before @): put them in a Secret and name it in spec.credentialsRef";
  }
  const problem = hostProblem(parts.host, policy);
  if (problem) return `${problem}; use a repository on an allowed host`;
  if (parts.scheme === "http:" && hostAllowance(parts.host, policy) !== "listed") {
    return "plain http:// is allowed only for hosts listed by name in --git-allowed-hosts: use https://";
  }
  return undefined;
}

/** The safe characters of a `ref`: letters, digits and `._/+=,@-` (no shell or glob characters). */
export const REF_CHARSET = /^[A-Za-z0-9._/+=,@-]+$/;

/**
 * Why `ref` may not be used (charset, then git's ref name rules), or
 * `undefined`; `HEAD` and commit ids are fine.
 */
export function refProblem(ref: string): string | undefined {
  if (ref === "HEAD" || isCommit(ref)) return undefined;
  if (!REF_CHARSET.test(ref)) {
    return "may hold only letters, digits and . _ / + = , @ - (a branch, a tag or a 40-hex commit)";
  }
  const problem = refNameProblem(ref);
  return problem ? `${problem.replace(/^ref "[^"]*" /, "")} (git's ref name rules)` : undefined;
}

/**
 * Why `ref` cannot be a branch or tag name (git's check-ref-format rules,
 * plus no glob characters), or `undefined` when it can.
 */
export function refNameProblem(ref: string): string | undefined {
  if (
    ref.length === 0 || ref.startsWith("-") || ref.startsWith("/") || ref.endsWith("/") || ref.endsWith(".") ||
    ref.endsWith(".lock") || ref.includes("..") || ref.includes("//") || ref.includes("@{") || ref === "@" ||
    ref.split("/").some((part) => part.startsWith(".")) ||
    // deno-lint-ignore no-control-regex
    /[\x00-\x20\x7f~^:?*[\\]/.test(ref)
  ) {
    return `ref ${JSON.stringify(ref)} is not a valid branch or tag name`;
  }
  return undefined;
}
