/**
 * Credentials for the API server: what goes into the Authorization header,
 * and (from exec plugins) client certificates. Token files are re-read
 * periodically so rotated service-account tokens are picked up; exec plugin
 * results are cached until their expiry or until the server answers 401.
 * Tokens are never logged or put into error messages.
 *
 * @module
 */
import { z } from "zod";

/** What a request presents to the API server. */
export interface Credential {
  /** Authorization header value, if any. */
  authorization?: string | undefined;
  /** Client certificate handed out by an exec plugin. */
  clientCert?: { cert: string; key: string } | undefined;
}

/** A source of credentials. */
export interface Credentials {
  /** The credential to send now. */
  get(): Promise<Credential>;
  /** Drops cached credentials (after a 401), so the next {@link get} fetches fresh ones; false when nothing can change. */
  invalidate(): boolean;
}

/** The same credential every time (a token in the kubeconfig, basic auth, or none). */
export function staticCredentials(authorization: string | undefined): Credentials {
  const c: Credential = { authorization };
  return { get: () => Promise.resolve(c), invalidate: () => false };
}

/**
 * A bearer token read from a file, re-read when older than `refreshMs`
 * (default 60 s) or after a 401: kubelet rotates projected service-account
 * tokens in place.
 */
export function tokenFileCredentials(path: string, refreshMs = 60_000): Credentials {
  let cached: { at: number; value: Credential } | undefined;
  return {
    async get() {
      if (cached && performance.now() - cached.at < refreshMs) return cached.value;
      let token: string;
      try {
        token = (await Deno.readTextFile(path)).trim();
      } catch (err) {
        if (cached) return cached.value; // keep the last good token while the file is being replaced
        throw new Error(`token file ${path}: cannot read it (${(err as Error).message})`, { cause: err });
      }
      if (!token) throw new Error(`token file ${path} is empty`);
      cached = { at: performance.now(), value: { authorization: `Bearer ${token}` } };
      return cached.value;
    },
    invalidate() {
      cached = undefined;
      return true;
    },
  };
}

/** The `exec` section of a kubeconfig user, plus what is passed to the plugin. */
export interface ExecSpec {
  apiVersion: string;
  command: string;
  args?: string[] | null | undefined;
  env?: { name: string; value: string }[] | null | undefined;
  provideClusterInfo?: boolean | undefined;
  installHint?: string | undefined;
  cluster?: Record<string, unknown>;
}

/** The ExecCredential a plugin prints on stdout. */
export const ExecCredential = z.object({
  apiVersion: z.string(),
  kind: z.literal("ExecCredential"),
  status: z.object({
    token: z.string().optional(),
    clientCertificateData: z.string().optional(),
    clientKeyData: z.string().optional(),
    expirationTimestamp: z.string().datetime({ offset: true }).optional(),
  }),
});

const EXEC_API_VERSIONS = ["client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1"];

/** Credentials from an exec plugin, cached until `expirationTimestamp` (or a 401 when it has none). */
export function execCredentials(spec: ExecSpec, field: string): Credentials {
  if (!EXEC_API_VERSIONS.includes(spec.apiVersion)) {
    throw new Error(`${field}.apiVersion: "${spec.apiVersion}" is not supported; use ${EXEC_API_VERSIONS[0]}`);
  }
  let cached: { until: number; value: Credential } | undefined;
  let running: Promise<Credential> | undefined;
  const run = async (): Promise<Credential> => {
    const info = {
      apiVersion: spec.apiVersion,
      kind: "ExecCredential",
      spec: { interactive: false, ...(spec.provideClusterInfo && spec.cluster ? { cluster: spec.cluster } : {}) },
    };
    const env: Record<string, string> = { KUBERNETES_EXEC_INFO: JSON.stringify(info) };
    for (const e of spec.env ?? []) env[e.name] = e.value;
    let out: Deno.CommandOutput;
    try {
      out = await new Deno.Command(spec.command, {
        args: spec.args ?? [],
        env,
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
      })
        .output();
    } catch (err) {
      const hint = spec.installHint ? ` ${spec.installHint.trim()}` : "";
      throw new Error(`${field}: cannot run ${spec.command} (${(err as Error).message}).${hint}`, { cause: err });
    }
    if (!out.success) {
      const stderr = new TextDecoder().decode(out.stderr).trim().slice(0, 300);
      throw new Error(`${field}: ${spec.command} exited with code ${out.code}${stderr ? `: ${stderr}` : ""}`);
    }
    let parsed;
    try {
      parsed = ExecCredential.safeParse(JSON.parse(new TextDecoder().decode(out.stdout)));
    } catch {
      throw new Error(`${field}: ${spec.command} did not print JSON (expected an ExecCredential)`);
    }
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      throw new Error(
        `${field}: ${spec.command} printed a bad ExecCredential: ${issue.path.join(".")}: ${issue.message}`,
      );
    }
    const s = parsed.data.status;
    if (!s.token && !(s.clientCertificateData && s.clientKeyData)) {
      throw new Error(
        `${field}: ${spec.command} printed neither status.token nor status.clientCertificateData/clientKeyData`,
      );
    }
    const value: Credential = {
      authorization: s.token ? `Bearer ${s.token}` : undefined,
      clientCert: s.clientCertificateData && s.clientKeyData
        ? { cert: s.clientCertificateData, key: s.clientKeyData }
        : undefined,
    };
    // Renew a little before the expiry, so no request goes out with a token about to lapse.
    const until = s.expirationTimestamp ? Date.parse(s.expirationTimestamp) - 10_000 : Infinity;
    cached = { until, value };
    return value;
  };
  return {
    get() {
      if (cached && Date.now() < cached.until) return Promise.resolve(cached.value);
      running ??= run().finally(() => running = undefined);
      return running;
    },
    invalidate() {
      cached = undefined;
      return true;
    },
  };
}
