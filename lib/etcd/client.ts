/**
 * A narrow etcd v3 client over etcd's own HTTP/JSON gateway (the grpc-gateway
 * every etcd serves on its client port: `POST /v3/<service>/<method>` with
 * the request message as JSON), through `fetch` with a client certificate.
 * It answers what an operator needs of a cluster's membership: the members,
 * each member's status (leader, learner, raft progress), alarms, and it can
 * remove a member and move leadership. Every request has its own deadline,
 * so a hung member costs at most that long.
 *
 * Member ids are uint64: they stay decimal strings here (JSON numbers would
 * lose precision), as the gateway writes them.
 *
 * A member's address may be a tenant's to choose, so the client follows no
 * redirect (a 3xx is an error) and its errors never carry the body of an
 * answer: the endpoint, the method, the HTTP status and etcd's numeric error
 * code at most (what NICO writes into a cluster's status comes from here).
 *
 * @module
 */
import { errorMessage } from "../runtime/log.ts";
import { encodeBase64 } from "../encoding.ts";

/** A member of the cluster, as the member list names it. */
export interface EtcdMember {
  /** The member id, a decimal uint64. */
  id: string;
  /** Empty for a member added but never started (it has not published its name yet). */
  name: string;
  peerURLs: string[];
  clientURLs: string[];
  isLearner: boolean;
}

/** One member's own view of itself and of the cluster (`Maintenance.Status`). */
export interface EtcdStatus {
  /** Who answered. */
  memberId: string;
  /** The leader's id as that member knows it ("0": none). */
  leader: string;
  raftTerm: string;
  raftIndex: string;
  raftAppliedIndex: string;
  isLearner: boolean;
  /** Errors the member reports about itself (such as a corrupt alarm). */
  errors: string[];
  dbSize: number;
  version: string;
}

/** An alarm raised on a member: `NOSPACE` (the quota is full, writes refused) or `CORRUPT`. */
export interface EtcdAlarm {
  memberId: string;
  alarm: string;
}

/** The credentials and deadline of an {@link EtcdClient}. */
export interface EtcdClientOptions {
  /** The CA of the members' serving certificates, PEM. */
  caPem: string;
  /** A client certificate and key the members trust, PEM. */
  certPem: string;
  keyPem: string;
  /** Each request's deadline (default 2 s). */
  timeoutMs?: number;
  /** Asked before each request leaves, with the endpoint; a throw refuses it (a check of where it goes). */
  beforeRequest?: ((endpoint: string) => Promise<void>) | undefined;
}

/** A request an etcd member refused or could not answer, naming the endpoint and the method. */
export class EtcdError extends Error {
  constructor(readonly endpoint: string, readonly method: string, message: string, options?: ErrorOptions) {
    super(`etcd ${endpoint} ${method}: ${message}`, options);
    this.name = "EtcdError";
  }
}

type Json = Record<string, unknown>;

/** Reads a JSON value as a string (uint64 values arrive as strings; a missing value is the default). */
const str = (v: unknown, dflt = ""): string => (typeof v === "string" ? v : typeof v === "number" ? String(v) : dflt);
const strings = (v: unknown): string[] => (Array.isArray(v) ? v.map((x) => str(x)) : []);

/** etcd's gRPC status code of an error answer (a number, never its free text), as `: gRPC code N`. */
function grpcCode(json: Json): string {
  const code = json.code;
  return typeof code === "number" && Number.isInteger(code) && code >= 0 && code < 100 ? `: gRPC code ${code}` : "";
}

/** A member from the gateway's JSON. */
function member(m: Json): EtcdMember {
  return {
    id: str(m.ID, "0"),
    name: str(m.name),
    peerURLs: strings(m.peerURLs),
    clientURLs: strings(m.clientURLs),
    isLearner: m.isLearner === true,
  };
}

/**
 * A client for the members at the given client URLs (`https://host:2379`).
 * One HTTP client (and its connections) for all of them, made on first use; {@link close} ends it, and a later
 * request makes a new one.
 */
export class EtcdClient {
  readonly #opts: EtcdClientOptions;
  #http: Deno.HttpClient | undefined;
  /** For gRPC calls, which need HTTP/2 (made on first use). */
  #h2: Deno.HttpClient | undefined;
  readonly #timeoutMs: number;

  constructor(opts: EtcdClientOptions) {
    this.#opts = opts;
    this.#timeoutMs = opts.timeoutMs ?? 2_000;
  }

  #client(): Deno.HttpClient {
    const o = this.#opts;
    return this.#http ??= Deno.createHttpClient({ caCerts: [o.caPem], cert: o.certPem, key: o.keyPem, http2: false });
  }

  /** POSTs `body` to `method` (such as `cluster/member/list`) at `endpoint`; answers the JSON reply. */
  async call(endpoint: string, method: string, body: Json = {}, signal?: AbortSignal): Promise<Json> {
    const deadline = AbortSignal.timeout(this.#timeoutMs);
    const all = signal ? AbortSignal.any([signal, deadline]) : deadline;
    let res: Response;
    try {
      await this.#opts.beforeRequest?.(endpoint);
      res = await fetch(`${endpoint.replace(/\/+$/, "")}/v3/${method}`, {
        method: "POST",
        redirect: "manual",
        body: JSON.stringify(body),
        headers: { "Content-Type": "application/json" },
        client: this.#client(),
        signal: all,
      });
    } catch (err) {
      const why = deadline.aborted ? `no answer within ${this.#timeoutMs} ms` : errorMessage(err);
      throw new EtcdError(endpoint, method, why, { cause: err });
    }
    if (res.status >= 300 && res.status < 400) {
      await res.body?.cancel();
      throw new EtcdError(endpoint, method, `HTTP ${res.status}: a redirect, which NICO never follows`);
    }
    const text = await res.text().catch((err) => {
      throw new EtcdError(endpoint, method, `reading the answer: ${errorMessage(err)}`, { cause: err });
    });
    let json: Json;
    try {
      json = JSON.parse(text) as Json;
    } catch {
      throw new EtcdError(endpoint, method, `HTTP ${res.status}: the answer is not etcd's JSON (not shown)`);
    }
    if (!res.ok) throw new EtcdError(endpoint, method, `HTTP ${res.status}${grpcCode(json)}`);
    return json;
  }

  /**
   * POSTs `body` to a server-streaming gateway `method` (such as `maintenance/snapshot`) at `endpoint` and answers the
   * response as soon as its headers arrive, which the client's deadline bounds; the body (newline-separated JSON
   * messages) is the caller's to read, and only `signal` bounds that. A refusal (not 2xx) throws an {@link EtcdError}.
   */
  stream(endpoint: string, method: string, body: Json = {}, signal?: AbortSignal): Promise<Response> {
    const url = `${endpoint.replace(/\/+$/, "")}/v3/${method}`;
    const init = {
      body: JSON.stringify(body),
      headers: { "Content-Type": "application/json" },
      client: this.#client(),
    };
    return this.#open(endpoint, method, url, init, signal);
  }

  /**
   * Calls the server-streaming gRPC `method` (such as `etcdserverpb.Maintenance/Snapshot`) at `endpoint` over HTTP/2
   * (etcd serves gRPC and the gateway on the same port), `message` being the request's protobuf encoding; answers the
   * response once its headers arrive (within the client's deadline). The body is the gRPC stream: each message as a
   * flag byte, a 4-byte big-endian length and the protobuf bytes. `fetch` shows no trailers: a call that fails before
   * sending anything answers `grpc-status` in its headers (thrown here as an {@link EtcdError}); one that fails later
   * just ends, which the caller must tell from a whole answer by its content.
   */
  async grpcStream(endpoint: string, method: string, message: Uint8Array, signal?: AbortSignal): Promise<Response> {
    const framed = new Uint8Array(5 + message.byteLength);
    new DataView(framed.buffer).setUint32(1, message.byteLength);
    framed.set(message, 5);
    const o = this.#opts;
    this.#h2 ??= Deno.createHttpClient({
      caCerts: [o.caPem],
      cert: o.certPem,
      key: o.keyPem,
      http1: false,
      http2: true,
    });
    const init = { body: framed, headers: { "content-type": "application/grpc", te: "trailers" }, client: this.#h2 };
    const res = await this.#open(endpoint, method, `${endpoint.replace(/\/+$/, "")}/${method}`, init, signal);
    const status = res.headers.get("grpc-status");
    if (status && status !== "0") {
      await res.body?.cancel();
      const why = decodeURIComponent(res.headers.get("grpc-message") ?? "");
      throw new EtcdError(endpoint, method, `gRPC status ${status}${why ? `: ${why}` : ""}`);
    }
    return res;
  }

  async #open(
    endpoint: string,
    method: string,
    url: string,
    init: { body: string | Uint8Array; headers: Record<string, string>; client: Deno.HttpClient },
    signal: AbortSignal | undefined,
  ): Promise<Response> {
    const headersDue = new AbortController();
    const timer = setTimeout(() => headersDue.abort(), this.#timeoutMs);
    const all = signal ? AbortSignal.any([signal, headersDue.signal]) : headersDue.signal;
    let res: Response;
    try {
      res = await fetch(url, {
        method: "POST",
        ...init,
        body: init.body as string | Uint8Array<ArrayBuffer>,
        signal: all,
      });
    } catch (err) {
      const why = headersDue.signal.aborted ? `no answer within ${this.#timeoutMs} ms` : errorMessage(err);
      throw new EtcdError(endpoint, method, why, { cause: err });
    } finally {
      clearTimeout(timer);
    }
    if (!res.ok) {
      const text = await res.text().catch(() => "");
      throw new EtcdError(endpoint, method, `HTTP ${res.status}: ${text.slice(0, 200)}`);
    }
    return res;
  }

  /** The cluster's members, as `endpoint` sees them (linearizable: it asks the leader). */
  async members(endpoint: string, signal?: AbortSignal): Promise<EtcdMember[]> {
    const json = await this.call(endpoint, "cluster/member/list", { linearizable: true }, signal);
    return (Array.isArray(json.members) ? json.members as Json[] : []).map(member);
  }

  /**
   * How many keys equal `key` (a NUL byte, none exists: the count is 0) and the revision the member at `endpoint`
   * answers with (NaN when its answer names none).
   */
  async count(endpoint: string, key = "\0", signal?: AbortSignal): Promise<{ revision: number; count: number }> {
    const json = await this.call(endpoint, "kv/range", { key: encodeBase64(key), count_only: true }, signal);
    return {
      revision: Number(str((json.header as Json | undefined)?.revision, "NaN")),
      count: Number(str(json.count, "0")),
    };
  }

  /** The status of the member at `endpoint`. */
  async status(endpoint: string, signal?: AbortSignal): Promise<EtcdStatus> {
    const json = await this.call(endpoint, "maintenance/status", {}, signal);
    const header = (json.header ?? {}) as Json;
    return {
      memberId: str(header.member_id, "0"),
      leader: str(json.leader, "0"),
      raftTerm: str(json.raftTerm, "0"),
      raftIndex: str(json.raftIndex, "0"),
      raftAppliedIndex: str(json.raftAppliedIndex, "0"),
      isLearner: json.isLearner === true,
      errors: strings(json.errors),
      dbSize: Number(str(json.dbSize, "0")),
      version: str(json.version),
    };
  }

  /** The alarms raised anywhere in the cluster, as `endpoint` knows them. */
  async alarms(endpoint: string, signal?: AbortSignal): Promise<EtcdAlarm[]> {
    const json = await this.call(endpoint, "maintenance/alarm", { action: "GET" }, signal);
    return (Array.isArray(json.alarms) ? json.alarms as Json[] : [])
      .map((a) => ({ memberId: str(a.memberID, "0"), alarm: str(a.alarm, "NONE") }))
      .filter((a) => a.alarm !== "NONE");
  }

  /** Removes the member `id` from the cluster (sent to `endpoint`, which must be another member). */
  async removeMember(endpoint: string, id: string, signal?: AbortSignal): Promise<EtcdMember[]> {
    const json = await this.call(endpoint, "cluster/member/remove", { ID: id }, signal);
    return (Array.isArray(json.members) ? json.members as Json[] : []).map(member);
  }

  /** Moves leadership to member `targetId`; `leaderEndpoint` must be the current leader's client URL. */
  async moveLeader(leaderEndpoint: string, targetId: string, signal?: AbortSignal): Promise<void> {
    await this.call(leaderEndpoint, "maintenance/transfer-leadership", { targetID: targetId }, signal);
  }

  /** Closes the connections (requests in flight finish); a later request opens new ones. */
  close(): void {
    this.#http?.close();
    this.#http = undefined;
    this.#h2?.close();
    this.#h2 = undefined;
  }
}
