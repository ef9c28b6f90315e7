/**
 * A cache of resolved Git revisions that polls in the background, so a
 * reconcile never waits on the network and a new commit on a tracked branch
 * reaches the reconciler as an event.
 *
 * @module
 */

import { errorMessage, type Logger, silentLogger } from "../runtime/log.ts";
import { credentialsFromSecret, type Creds } from "./credentials.ts";
import type { HostPolicy } from "./hosts.ts";
import { ResolveError, type ResolveOptions, resolveRef } from "./resolve.ts";
import { isCommit, redactUrl } from "./url.ts";

/** What to resolve: a repository, a ref in it, and the Secret with its credentials. */
export interface RevisionKey {
  url: string;
  /** Branch, tag or commit; absent means the remote's default branch. */
  ref?: string | undefined;
  /** The Secret `credentialsRef` names, in the cluster's namespace. */
  credentialsSecret?: { namespace: string; name: string } | undefined;
}

/** What {@link RevisionResolver.lookup} knows about a key right now. */
export interface Revision {
  /** The last commit resolved (kept while later attempts fail). */
  commit?: string;
  /** Why the last attempt failed; absent after a success. One line, no secrets. */
  error?: string;
  /** When `commit` was last confirmed. */
  resolvedAt?: Date;
}

/** Reads a Secret's `data` (base64 values); `undefined` when it does not exist. */
export type SecretLookup = (namespace: string, name: string) => Promise<Record<string, string> | undefined>;

/** Options of {@link RevisionResolver}. */
export interface RevisionResolverOptions {
  /** Reads the credentials Secret of keys that name one. */
  secretLookup?: SecretLookup;
  /** Called when a key's commit or error changes (not for 40-hex refs, which never change). */
  onChange?: (key: RevisionKey) => void;
  /** How often each key is resolved again (default 5 min). */
  intervalMs?: number;
  /** First retry delay after a failure, doubled per failure and capped at `intervalMs` (default 5 s). */
  retryMs?: number;
  /** Resolves running at once (default 4). */
  concurrency?: number;
  /** Timeout of one `git ls-remote` (default 30 s). */
  timeoutMs?: number;
  /** Hosts a repository may be on (`--git-allowed-hosts`); default: public hosts only. */
  allowedHosts?: HostPolicy;
  logger?: Logger;
  /** Replaces {@link resolveRef} (for tests). */
  resolve?: (url: string, ref: string | undefined, creds: Creds | undefined, opts: ResolveOptions) => Promise<string>;
}

/** A stable string for `key`; keys with the same string share one cache entry. */
export function revisionKey(key: RevisionKey): string {
  const ref = key.ref === "HEAD" ? "" : key.ref ?? "";
  return JSON.stringify([key.url, ref, key.credentialsSecret?.namespace ?? "", key.credentialsSecret?.name ?? ""]);
}

interface Entry {
  key: RevisionKey;
  commit?: string | undefined;
  error?: string | undefined;
  resolvedAt?: Date | undefined;
  /** When the last attempt started (ms since epoch). */
  attemptedAt?: number | undefined;
  failures: number;
  state: "idle" | "queued" | "running";
  /** A refresh was asked for while running. */
  again: boolean;
  timer?: ReturnType<typeof setTimeout> | undefined;
  abort?: AbortController | undefined;
}

/**
 * Resolves `ref`s to commits in the background and caches the answers.
 * {@link lookup} answers from the cache at once and starts a resolve for a
 * new or stale key; every key is resolved again every `intervalMs` until
 * {@link forget} or {@link stop}; a change calls `onChange`.
 */
export class RevisionResolver {
  readonly #entries = new Map<string, Entry>();
  readonly #queue: Entry[] = [];
  readonly #inflight = new Set<Promise<void>>();
  readonly #o:
    & Required<Omit<RevisionResolverOptions, "secretLookup" | "onChange" | "allowedHosts">>
    & RevisionResolverOptions;
  #running = 0;
  #stopped = false;

  constructor(options: RevisionResolverOptions = {}) {
    const intervalMs = options.intervalMs ?? 5 * 60_000;
    this.#o = {
      ...options,
      intervalMs,
      retryMs: Math.min(options.retryMs ?? 5_000, intervalMs),
      concurrency: Math.max(1, options.concurrency ?? 4),
      timeoutMs: options.timeoutMs ?? 30_000,
      logger: options.logger ?? silentLogger,
      resolve: options.resolve ?? resolveRef,
    };
  }

  /**
   * What is known about `key` now; never waits. A 40-hex `ref` is its own
   * commit. A new key answers `{}` and is resolved in the background
   * (`onChange` follows); a key whose last attempt is older than
   * `intervalMs` is resolved again.
   */
  lookup(key: RevisionKey): Revision {
    if (key.ref !== undefined && isCommit(key.ref)) return { commit: key.ref.toLowerCase() };
    const id = revisionKey(key);
    let entry = this.#entries.get(id);
    if (!entry) {
      entry = { key: copyKey(key), failures: 0, state: "idle", again: false };
      this.#entries.set(id, entry);
      this.#enqueue(entry);
    } else if (entry.state === "idle" && Date.now() - (entry.attemptedAt ?? 0) >= this.#o.intervalMs) {
      this.#enqueue(entry);
    }
    const out: Revision = {};
    if (entry.commit !== undefined) out.commit = entry.commit;
    if (entry.error !== undefined) out.error = entry.error;
    if (entry.resolvedAt !== undefined) out.resolvedAt = entry.resolvedAt;
    return out;
  }

  /** Resolves `key` again now (for example after its Secret changed); no-op for unknown keys. */
  refresh(key: RevisionKey): void {
    const entry = this.#entries.get(revisionKey(key));
    if (!entry) return;
    if (entry.state === "running") entry.again = true;
    else this.#enqueue(entry);
  }

  /** Stops polling `key` and drops what is known about it. */
  forget(key: RevisionKey): void {
    const id = revisionKey(key);
    const entry = this.#entries.get(id);
    if (!entry) return;
    this.#entries.delete(id);
    clearTimeout(entry.timer);
    entry.abort?.abort();
    const i = this.#queue.indexOf(entry);
    if (i >= 0) this.#queue.splice(i, 1);
  }

  /** Every key being polled. */
  keys(): RevisionKey[] {
    return [...this.#entries.values()].map((e) => copyKey(e.key));
  }

  /** Cancels every timer and kills running resolves; resolves once they have exited. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#queue.length = 0;
    for (const entry of this.#entries.values()) {
      clearTimeout(entry.timer);
      entry.abort?.abort();
    }
    while (this.#inflight.size) await Promise.all([...this.#inflight]);
  }

  #enqueue(entry: Entry): void {
    if (this.#stopped || entry.state !== "idle") return;
    clearTimeout(entry.timer);
    entry.timer = undefined;
    entry.state = "queued";
    this.#queue.push(entry);
    this.#pump();
  }

  #pump(): void {
    while (!this.#stopped && this.#running < this.#o.concurrency) {
      const entry = this.#queue.shift();
      if (!entry) return;
      this.#running++;
      const p = this.#run(entry).finally(() => {
        this.#running--;
        this.#inflight.delete(p);
        this.#pump();
      });
      this.#inflight.add(p);
    }
  }

  async #run(entry: Entry): Promise<void> {
    entry.state = "running";
    entry.again = false;
    entry.attemptedAt = Date.now();
    const abort = new AbortController();
    entry.abort = abort;
    let commit: string | undefined;
    let error: string | undefined;
    let detail: string | undefined;
    try {
      commit = await this.#o.resolve(entry.key.url, entry.key.ref, await this.#credentials(entry.key), {
        timeoutMs: this.#o.timeoutMs,
        signal: abort.signal,
        ...(this.#o.allowedHosts ? { allowedHosts: this.#o.allowedHosts } : {}),
      });
    } catch (err) {
      error = errorMessage(err);
      if (err instanceof ResolveError) detail = err.detail;
    } finally {
      entry.abort = undefined;
      entry.state = "idle";
    }
    if (abort.signal.aborted || this.#stopped || !this.#entries.has(revisionKey(entry.key))) return;
    let changed: boolean;
    if (commit !== undefined) {
      changed = commit !== entry.commit || entry.error !== undefined;
      entry.commit = commit;
      entry.error = undefined;
      entry.resolvedAt = new Date();
      entry.failures = 0;
    } else {
      changed = error !== entry.error;
      entry.error = error;
      entry.failures++;
    }
    const log = { url: redactUrl(entry.key.url), ref: entry.key.ref ?? "HEAD" };
    if (changed) {
      if (error !== undefined) this.#o.logger.error("cannot resolve git ref", { ...log, error, detail });
      else this.#o.logger.info("git ref resolved", { ...log, commit });
      try {
        this.#o.onChange?.(copyKey(entry.key));
      } catch (err) {
        this.#o.logger.error("revision onChange failed", { ...log, error: errorMessage(err) });
      }
    }
    if (entry.again) return this.#enqueue(entry);
    const delay = error === undefined
      ? this.#o.intervalMs
      : Math.min(this.#o.intervalMs, this.#o.retryMs * 2 ** Math.min(entry.failures - 1, 30));
    entry.timer = setTimeout(() => {
      entry.timer = undefined;
      this.#enqueue(entry);
    }, delay);
  }

  /** The credentials of `key`'s Secret; throws a one-line error naming the Secret, never a value. */
  async #credentials(key: RevisionKey): Promise<Creds | undefined> {
    const ref = key.credentialsSecret;
    if (!ref) return undefined;
    const where = `credentialsRef Secret ${ref.namespace}/${ref.name}`;
    if (!this.#o.secretLookup) throw new Error(`${where} cannot be read: NICO was started without Secret access`);
    let data: Record<string, string> | undefined;
    try {
      data = await this.#o.secretLookup(ref.namespace, ref.name);
    } catch (err) {
      throw new Error(`cannot read ${where}: ${errorMessage(err)}`);
    }
    if (data === undefined) throw new Error(`${where} not found`);
    const creds = credentialsFromSecret(data);
    if ("error" in creds) throw new Error(`${where}: ${creds.error}`);
    return creds;
  }
}

function copyKey(key: RevisionKey): RevisionKey {
  const out: RevisionKey = { url: key.url };
  if (key.ref !== undefined) out.ref = key.ref;
  if (key.credentialsSecret) out.credentialsSecret = { ...key.credentialsSecret };
  return out;
}
