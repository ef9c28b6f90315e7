/**
 * The API server version of each control-plane node: its own `/version`
 * at its address (port 6443), asked with the cluster CA and NICO's client
 * certificate, off the pass's critical path. A pass names the nodes and
 * reads the last answers ({@link ApiServerVersions.answers}, which never
 * waits); each node is asked again every interval, at once when it is new,
 * and once more after each of its applies, so a version that changed with
 * an apply is seen within a probe. A new answer wakes the cluster.
 *
 * @module
 */
import type { KubeClient } from "../../../lib/kube/client.ts";
import { errorMessage, type Logger } from "../../../lib/runtime/log.ts";

/** The port a control-plane node's own API server listens on (the flake contract). */
export const NODE_API_PORT = 6443;

/** What a version looks like (`v1.31.4`, `v1.31.4+k3s1`): anything else in `gitVersion` is not taken, nor shown. */
const GIT_VERSION = /^v?\d{1,3}\.\d{1,3}(\.\d{1,5})?([-+.][0-9A-Za-z.+-]{0,60})?$/;

/** The `gitVersion` of a `/version` answer, or `undefined` when it names none a version could be. */
export function gitVersionOf(text: string): string | undefined {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return undefined; // a SyntaxError would quote the answer
  }
  const v = (json as { gitVersion?: unknown } | null)?.gitVersion;
  return typeof v === "string" && GIT_VERSION.test(v) ? v : undefined;
}

/** A control-plane node to ask: its Machine, its address, and when it last applied (asked again after that). */
export interface ApiServerTarget {
  machine: string;
  host: string;
  since?: Date | undefined;
}

/** The last answer of one node's API server: its `gitVersion`, or why there is none. */
export interface ApiServerAnswer {
  host: string;
  at: Date;
  version?: string | undefined;
  error?: string | undefined;
}

export interface ApiServerVersionsOptions {
  /** A client for `https://host:port` with the cluster's CA and NICO's certificate (throws when not allowed). */
  client: (server: string) => KubeClient;
  /** The deadline of one probe (at most 2 s). */
  timeoutMs: number;
  now: () => Date;
  /** An answer changed. */
  onChange: () => void;
  log: Logger;
}

/** The answers of a workload cluster's control-plane nodes, by machine. */
export class ApiServerVersions {
  readonly #o: ApiServerVersionsOptions;
  readonly #targets = new Map<string, ApiServerTarget>();
  readonly #answers = new Map<string, ApiServerAnswer>();
  readonly #clients = new Map<string, KubeClient>();
  readonly #asking = new Set<string>();
  #closed = false;

  constructor(o: ApiServerVersionsOptions) {
    this.#o = o;
  }

  /**
   * The nodes to ask are `targets` from now on; answers the last answer of each (none yet: absent). A new node,
   * one whose address changed and one that applied since its last answer are asked at once, in the background.
   */
  answers(targets: readonly ApiServerTarget[]): Map<string, ApiServerAnswer> {
    const names = new Set(targets.map((t) => t.machine));
    for (const m of [...this.#targets.keys()]) if (!names.has(m)) this.#targets.delete(m);
    for (const m of [...this.#answers.keys()]) if (!names.has(m)) this.#answers.delete(m);
    for (const t of targets) {
      this.#targets.set(t.machine, t);
      const last = this.#answers.get(t.machine);
      if (!last || last.host !== t.host || (t.since !== undefined && last.at < t.since)) void this.#ask(t);
    }
    return new Map(targets.flatMap((t) => {
      const a = this.#answers.get(t.machine);
      return a && a.host === t.host ? [[t.machine, a] as const] : [];
    }));
  }

  /** Asks every node once (the connection's loop calls this every interval). */
  async askAll(): Promise<void> {
    await Promise.all([...this.#targets.values()].map((t) => this.#ask(t)));
  }

  async #ask(t: ApiServerTarget): Promise<void> {
    if (this.#closed || this.#asking.has(t.machine)) return;
    this.#asking.add(t.machine);
    let answer: ApiServerAnswer;
    try {
      const text = await this.#clientFor(t.host).getText("/version", AbortSignal.timeout(this.#o.timeoutMs));
      const version = gitVersionOf(text);
      answer = version
        ? { host: t.host, at: this.#o.now(), version }
        : { host: t.host, at: this.#o.now(), error: "/version names no gitVersion (the answer is not shown)" };
    } catch (err) {
      answer = { host: t.host, at: this.#o.now(), error: `/version: ${errorMessage(err)}` };
    } finally {
      this.#asking.delete(t.machine);
    }
    if (this.#closed || !this.#targets.has(t.machine)) return;
    const last = this.#answers.get(t.machine);
    this.#answers.set(t.machine, answer);
    if (last?.version !== answer.version || last?.host !== answer.host || !last) {
      this.#o.log.debug("API server version", { node: t.machine, version: answer.version, error: answer.error });
      this.#o.onChange();
    }
  }

  #clientFor(host: string): KubeClient {
    let c = this.#clients.get(host);
    if (!c) {
      const h = host.includes(":") ? `[${host}]` : host;
      c = this.#o.client(`https://${h}:${NODE_API_PORT}`);
      this.#clients.set(host, c);
    }
    return c;
  }

  /** Stops asking and closes the clients. */
  async close(): Promise<void> {
    this.#closed = true;
    await Promise.all([...this.#clients.values()].map((c) => c.close()));
    this.#clients.clear();
  }
}
