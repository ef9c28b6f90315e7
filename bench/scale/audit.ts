/**
 * Per-user request accounting through the API server's audit log.
 *
 * The API server's `/metrics` cannot attribute requests to a client:
 * `apiserver_request_total` is labelled by verb, group, resource,
 * subresource, scope, component and code, but not by user or user agent
 * (on purpose: unbounded cardinality); `authenticated_user_requests` folds
 * every user other than `admin` into `other`; the APF metrics are per flow
 * schema, and `system:masters` is exempt. The audit log has user, user agent,
 * verb, resource, subresource and code for every request, so the benchmark
 * turns it on with a policy that records only one user at Metadata level.
 *
 * @module
 */

/** Policy: requests of `user` (or of each of several users) at Metadata level (no bodies), nothing else. */
export function auditPolicy(user: string | string[]): string {
  const users = (Array.isArray(user) ? user : [user]).map((u) => JSON.stringify(u)).join(", ");
  return [
    "apiVersion: audit.k8s.io/v1",
    "kind: Policy",
    'omitStages: ["RequestReceived"]',
    "rules:",
    "  - level: Metadata",
    `    users: [${users}]`,
    "  - level: None",
    "",
  ].join("\n");
}

/** kube-apiserver flags for a JSON audit log at `logPath` (synchronous writes, so a window's count is complete). */
export function auditFlags(policyPath: string, logPath: string): string[] {
  return [
    `--audit-policy-file=${policyPath}`,
    `--audit-log-path=${logPath}`,
    "--audit-log-format=json",
    "--audit-log-mode=blocking",
    "--audit-log-maxsize=0",
  ];
}

export interface AuditRequest {
  /** Milliseconds since the epoch, when the API server received the request. */
  at: number;
  verb: string;
  /** `resource` or `resource/subresource`; the path for non-resource requests. */
  resource: string;
  code: number;
  userAgent: string;
  /** The authenticated user name. */
  user: string;
  /** The request's path and query. */
  uri: string;
}

const WRITE_VERBS = new Set(["create", "update", "patch", "delete", "deletecollection"]);

export const isWrite = (r: AuditRequest) => WRITE_VERBS.has(r.verb);

/**
 * The requests in the audit log, one per request: watches count when their
 * response starts, everything else when it completes.
 */
export async function readAudit(path: string): Promise<AuditRequest[]> {
  const text = await Deno.readTextFile(path).catch(() => "");
  const out: AuditRequest[] = [];
  for (const line of text.split("\n")) {
    if (!line) continue;
    const e = JSON.parse(line) as {
      stage: string;
      verb: string;
      requestURI: string;
      userAgent?: string;
      user?: { username?: string };
      objectRef?: { resource?: string; subresource?: string };
      responseStatus?: { code?: number };
      requestReceivedTimestamp: string;
    };
    const counted = e.verb === "watch" ? e.stage === "ResponseStarted" : e.stage === "ResponseComplete" ||
      e.stage === "Panic";
    if (!counted) continue;
    const o = e.objectRef;
    out.push({
      at: Date.parse(e.requestReceivedTimestamp),
      verb: e.verb,
      resource: o?.resource ? (o.subresource ? `${o.resource}/${o.subresource}` : o.resource) : e.requestURI,
      code: e.responseStatus?.code ?? 0,
      userAgent: e.userAgent ?? "",
      user: e.user?.username ?? "",
      uri: e.requestURI,
    });
  }
  return out;
}

/** Requests received in [from, to). */
export function within(reqs: AuditRequest[], from: number, to: number): AuditRequest[] {
  return reqs.filter((r) => r.at >= from && r.at < to);
}

/** Counts by `verb resource`, most first; plus the total and the failed (code >= 400) ones. */
export function tally(
  reqs: AuditRequest[],
): {
  total: number;
  writes: number;
  errors: number;
  byVerbResource: Record<string, number>;
  errorCodes: Record<string, number>;
} {
  const by = new Map<string, number>();
  const codes = new Map<string, number>();
  let errors = 0;
  for (const r of reqs) {
    const k = `${r.verb} ${r.resource}`;
    by.set(k, (by.get(k) ?? 0) + 1);
    if (r.code >= 400) {
      errors++;
      const ck = `${r.code} ${k}`;
      codes.set(ck, (codes.get(ck) ?? 0) + 1);
    }
  }
  const sorted = (m: Map<string, number>) => Object.fromEntries([...m.entries()].sort((a, b) => b[1] - a[1]));
  return {
    total: reqs.length,
    writes: reqs.filter(isWrite).length,
    errors,
    byVerbResource: sorted(by),
    errorCodes: sorted(codes),
  };
}
