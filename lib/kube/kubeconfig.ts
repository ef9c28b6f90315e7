/**
 * Loads how to reach the API server: a kubeconfig file (or a `:`-separated
 * list, as in $KUBECONFIG), ~/.kube/config, or the in-cluster service
 * account. The file is validated with zod; every refusal names the field
 * and the fix. Credentials (tokens, token files, exec plugins) live in
 * {@link ./credentials.ts}; this module only decides which ones apply.
 *
 * @module
 */
import { dirname, isAbsolute, join } from "node:path";
import { parse as parseYaml } from "yaml";
import { z } from "zod";
import {
  type Credentials,
  execCredentials,
  type ExecSpec,
  staticCredentials,
  tokenFileCredentials,
} from "./credentials.ts";

const Cluster = z.object({
  server: z.string().url(),
  "certificate-authority": z.string().optional(),
  "certificate-authority-data": z.string().optional(),
  "insecure-skip-tls-verify": z.boolean().optional(),
  "tls-server-name": z.string().optional(),
  "proxy-url": z.string().optional(),
});

const ExecConfig = z.object({
  apiVersion: z.string(),
  command: z.string().min(1),
  args: z.array(z.string()).nullish(),
  env: z.array(z.object({ name: z.string(), value: z.string() })).nullish(),
  provideClusterInfo: z.boolean().optional(),
  installHint: z.string().optional(),
  interactiveMode: z.string().optional(),
});

const User = z.object({
  "client-certificate": z.string().optional(),
  "client-certificate-data": z.string().optional(),
  "client-key": z.string().optional(),
  "client-key-data": z.string().optional(),
  token: z.string().optional(),
  tokenFile: z.string().optional(),
  username: z.string().optional(),
  password: z.string().optional(),
  exec: ExecConfig.nullish(),
  "auth-provider": z.unknown().optional(),
});

const Context = z.object({ cluster: z.string().min(1), user: z.string().optional(), namespace: z.string().optional() });

/** The parts of a kubeconfig file NICO reads; unknown keys are ignored, as kubectl does. */
export const KubeconfigFile = z.object({
  "current-context": z.string().optional(),
  clusters: z.array(z.object({ name: z.string().min(1), cluster: Cluster })).nullish(),
  users: z.array(z.object({ name: z.string().min(1), user: User })).nullish(),
  contexts: z.array(z.object({ name: z.string().min(1), context: Context })).nullish(),
});
type KubeconfigFile = z.infer<typeof KubeconfigFile>;

/** Where to find the cluster, and what to show it. */
export interface KubeConfig {
  /** API server URL without a trailing slash. */
  server: string;
  /** Context name, or `in-cluster`. */
  context: string;
  /** Namespace of the context (or the service account's), if any. */
  namespace?: string | undefined;
  /** PEM CA certificates trusted for the API server (besides the system roots). */
  caCerts: string[];
  /** Client certificate and key (PEM) for mutual TLS. */
  clientCert?: { cert: string; key: string } | undefined;
  /** Proxy URL for every request. */
  proxyUrl?: string | undefined;
  /** Bearer tokens, basic auth or exec plugin; may also hand out client certificates. */
  credentials: Credentials;
}

/** Options of {@link loadKubeConfig}. */
export interface LoadOptions {
  /** Kubeconfig file, or several separated by `:`; default $KUBECONFIG, then ~/.kube/config, then in-cluster. */
  path?: string | undefined;
  /** Context to use instead of `current-context`. */
  context?: string | undefined;
  /** Accept `insecure-skip-tls-verify: true` (the process must also run with Deno's --unsafely-ignore-certificate-errors). */
  allowInsecure?: boolean;
  /** Environment lookup (tests pass their own). */
  env?: (name: string) => string | undefined;
  /** Service account directory for in-cluster config. */
  serviceAccountDir?: string;
  /** How often token files are re-read (default 60 s). */
  tokenRefreshMs?: number;
}

/** Where a pod's service account token, CA and namespace are mounted. */
export const SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount";

const fromBase64 = (s: string) => new TextDecoder().decode(Uint8Array.from(atob(s.trim()), (c) => c.charCodeAt(0)));

function exists(path: string): boolean {
  try {
    Deno.statSync(path);
    return true;
  } catch {
    return false;
  }
}

/** Loads the configuration; throws an Error that says what is missing or wrong and how to fix it. */
export function loadKubeConfig(opts: LoadOptions = {}): KubeConfig {
  const env = opts.env ?? ((n: string) => Deno.env.get(n));
  const list = opts.path ?? env("KUBECONFIG");
  if (list) {
    const paths = list.split(":").filter((p) => p !== "");
    return fromFiles(paths, opts);
  }
  const home = env("HOME");
  if (home && exists(join(home, ".kube", "config"))) return fromFiles([join(home, ".kube", "config")], opts);
  const host = env("KUBERNETES_SERVICE_HOST");
  if (host) return inClusterConfig({ ...opts, env });
  throw new Error("Cannot find a Kubernetes cluster: set --kubeconfig or KUBECONFIG, or run inside a cluster");
}

/** In-cluster config from KUBERNETES_SERVICE_HOST/PORT and the mounted service account (token re-read for rotation). */
export function inClusterConfig(opts: LoadOptions = {}): KubeConfig {
  const env = opts.env ?? ((n: string) => Deno.env.get(n));
  const host = env("KUBERNETES_SERVICE_HOST");
  const port = env("KUBERNETES_SERVICE_PORT") ?? "443";
  if (!host) throw new Error("in-cluster config: KUBERNETES_SERVICE_HOST is not set (not running in a pod?)");
  const dir = opts.serviceAccountDir ?? SERVICE_ACCOUNT_DIR;
  const read = (name: string) => {
    try {
      return Deno.readTextFileSync(join(dir, name));
    } catch (err) {
      throw new Error(`in-cluster config: cannot read ${join(dir, name)} (is a service account token mounted?)`, {
        cause: err,
      });
    }
  };
  const ca = read("ca.crt");
  read("token"); // fail early when it is missing; the credentials re-read it
  let namespace: string | undefined;
  try {
    namespace = Deno.readTextFileSync(join(dir, "namespace")).trim() || undefined;
  } catch { /* optional */ }
  const h = host.includes(":") ? `[${host}]` : host;
  return {
    server: `https://${h}:${port}`,
    context: "in-cluster",
    namespace,
    caCerts: [ca],
    credentials: tokenFileCredentials(join(dir, "token"), opts.tokenRefreshMs),
  };
}

/** Merges files the way kubectl does: the first file to define a name or current-context wins. */
function mergeFiles(paths: string[]): { merged: KubeconfigFile; origin: Map<object, string> } {
  const merged: Required<{ [K in keyof KubeconfigFile]: NonNullable<KubeconfigFile[K]> }> = {
    "current-context": "",
    clusters: [],
    users: [],
    contexts: [],
  };
  const origin = new Map<object, string>();
  for (const path of paths) {
    let text: string;
    try {
      text = Deno.readTextFileSync(path);
    } catch (err) {
      if (paths.length > 1 && err instanceof Deno.errors.NotFound) continue;
      throw new Error(`kubeconfig ${path}: cannot read it (${(err as Error).message})`, { cause: err });
    }
    const parsed = KubeconfigFile.safeParse(parseYaml(text) ?? {});
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      throw new Error(`kubeconfig ${path}: ${issue.path.join(".") || "(top level)"}: ${issue.message}`);
    }
    const f = parsed.data;
    if (!merged["current-context"] && f["current-context"]) merged["current-context"] = f["current-context"];
    for (const key of ["clusters", "users", "contexts"] as const) {
      for (const entry of f[key] ?? []) {
        const list = merged[key] as { name: string }[];
        if (list.some((e) => e.name === entry.name)) continue;
        list.push(entry);
        origin.set(entry, dirname(path));
      }
    }
  }
  return { merged, origin };
}

function fromFiles(paths: string[], opts: LoadOptions): KubeConfig {
  const { merged, origin } = mergeFiles(paths);
  const where = paths.join(":");
  const name = opts.context ?? merged["current-context"];
  if (!name) throw new Error(`kubeconfig ${where}: no current-context; set one or pass a context`);
  const ctx = merged.contexts?.find((c) => c.name === name);
  if (!ctx) {
    const known = (merged.contexts ?? []).map((c) => c.name).join(", ") || "none";
    throw new Error(`kubeconfig ${where}: context "${name}" is not defined (it has: ${known})`);
  }
  const cl = merged.clusters?.find((c) => c.name === ctx.context.cluster);
  if (!cl) throw new Error(`kubeconfig ${where}: cluster "${ctx.context.cluster}" of context "${name}" is not defined`);
  const us = ctx.context.user ? merged.users?.find((u) => u.name === ctx.context.user) : undefined;
  if (ctx.context.user && !us) {
    throw new Error(`kubeconfig ${where}: user "${ctx.context.user}" of context "${name}" is not defined`);
  }
  const c = cl.cluster;
  const resolve = (entry: object, p: string) => isAbsolute(p) ? p : join(origin.get(entry) ?? ".", p);
  const field = (what: string) => `kubeconfig ${where}: cluster "${cl.name}": ${what}`;
  if (c["insecure-skip-tls-verify"] && !opts.allowInsecure) {
    throw new Error(field(
      "insecure-skip-tls-verify is true, so the API server could not be verified; set certificate-authority or " +
        "certificate-authority-data instead (or explicitly allow insecure kubeconfigs)",
    ));
  }
  if (c["tls-server-name"]) {
    throw new Error(field("tls-server-name is not supported; use a server URL whose name the certificate carries"));
  }
  const caCerts: string[] = [];
  if (c["certificate-authority-data"]) caCerts.push(fromBase64(c["certificate-authority-data"]));
  else if (c["certificate-authority"]) {
    caCerts.push(readFile(resolve(cl, c["certificate-authority"]), field("certificate-authority")));
  }

  const u = us?.user ?? {};
  const ufield = (what: string) => `kubeconfig ${where}: user "${us?.name}": ${what}`;
  if (u["auth-provider"] !== undefined) {
    throw new Error(ufield("auth-provider plugins are not supported; use an exec credential plugin instead"));
  }
  const cert = u["client-certificate-data"]
    ? fromBase64(u["client-certificate-data"])
    : u["client-certificate"]
    ? readFile(resolve(us!, u["client-certificate"]), ufield("client-certificate"))
    : undefined;
  const key = u["client-key-data"]
    ? fromBase64(u["client-key-data"])
    : u["client-key"]
    ? readFile(resolve(us!, u["client-key"]), ufield("client-key"))
    : undefined;
  if ((cert === undefined) !== (key === undefined)) {
    throw new Error(ufield("a client certificate needs both client-certificate(-data) and client-key(-data)"));
  }
  let credentials: Credentials;
  if (u.token) credentials = staticCredentials(`Bearer ${u.token}`);
  else if (u.tokenFile) credentials = tokenFileCredentials(resolve(us!, u.tokenFile), opts.tokenRefreshMs);
  else if (u.exec) {
    const exec: ExecSpec = {
      ...u.exec,
      command: u.exec.command.includes("/") ? resolve(us!, u.exec.command) : u.exec.command,
      cluster: { server: c.server, ...(caCerts[0] ? { "certificate-authority-data": btoa(caCerts[0]) } : {}) },
    };
    credentials = execCredentials(exec, ufield("exec"));
  } else if (u.username !== undefined && u.password !== undefined) {
    credentials = staticCredentials(`Basic ${btoa(`${u.username}:${u.password}`)}`);
  } else credentials = staticCredentials(undefined);
  return {
    server: c.server.replace(/\/+$/, ""),
    context: name,
    namespace: ctx.context.namespace,
    caCerts,
    clientCert: cert !== undefined && key !== undefined ? { cert, key } : undefined,
    proxyUrl: c["proxy-url"],
    credentials,
  };
}

function readFile(path: string, field: string): string {
  try {
    return Deno.readTextFileSync(path);
  } catch (err) {
    throw new Error(`${field}: cannot read ${path} (${(err as Error).message})`, { cause: err });
  }
}
