/**
 * The admin kubeconfig NICO publishes: a client certificate signed by the
 * cluster CA, for the cluster's endpoint. Pure apart from key generation.
 *
 * @module
 */
import { parse as parseYaml, stringify } from "yaml";
import type { z } from "zod";
import { decodeBase64, encodeBase64 } from "../../lib/encoding.ts";
import { KubeconfigFile } from "../../lib/kube/kubeconfig.ts";
import { certInfo, issueCert, type KeyPair, signedBy } from "../../lib/pki.ts";

export const ADMIN_COMMON_NAME = "nico-admin";
export const ADMIN_ORGANIZATION = "system:masters";
export const CLIENT_CERT_DAYS = 365;
/** Re-sign when less than this remains (about six months). */
export const RENEW_BEFORE_MS = 182 * 24 * 60 * 60 * 1000;

/**
 * `https://host:port`, with brackets around an IPv6 address.
 *
 * @example
 * ```ts
 * import { endpointUrl } from "./kubeconfig.ts";
 * endpointUrl("::1", 6443); // "https://[::1]:6443"
 * ```
 */
export function endpointUrl(host: string, port: number): string {
  const h = host.includes(":") && !host.startsWith("[") ? `[${host}]` : host;
  return `https://${h}:${port}`;
}

/**
 * renderKubeconfig.
 *
 * @example
 * ```ts
 * import { renderKubeconfig } from "./kubeconfig.ts";
 * renderKubeconfig("c", "https://127.0.0.1:6443", "CA", { certPem: "CERT", keyPem: "KEY" }).includes("current-context: c"); // true
 * ```
 */
export function renderKubeconfig(cluster: string, server: string, caPem: string, client: KeyPair): string {
  const b64 = encodeBase64;
  const user = `${cluster}-admin`;
  return stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: cluster, cluster: { server, "certificate-authority-data": b64(caPem) } }],
    users: [{
      name: user,
      user: { "client-certificate-data": b64(client.certPem), "client-key-data": b64(client.keyPem) },
    }],
    contexts: [{ name: cluster, context: { cluster, user } }],
    "current-context": cluster,
  });
}

/**
 * A fresh admin kubeconfig for `server`, signed by `ca`.
 *
 * @example
 * ```ts
 * import { issueKubeconfig, readKubeconfig } from "./kubeconfig.ts";
 * import { createCa } from "../../lib/pki.ts";
 * const ca = await createCa({ commonName: "c-ca" });
 * const text = await issueKubeconfig("c", "https://127.0.0.1:6443", ca);
 * readKubeconfig(text)?.server; // "https://127.0.0.1:6443"
 * ```
 */
export async function issueKubeconfig(cluster: string, server: string, ca: KeyPair, now = new Date()): Promise<string> {
  const client = await issueCert(ca, {
    commonName: ADMIN_COMMON_NAME,
    organizations: [ADMIN_ORGANIZATION],
    usage: "client",
    days: CLIENT_CERT_DAYS,
    now,
  });
  return renderKubeconfig(cluster, server, ca.certPem, client);
}

/** A kubeconfig NICO issued, read back: its current context's server, CA and client certificate, all inline. */
export interface IssuedKubeconfig {
  /** The current context's name. */
  context: string;
  server: string;
  caPem: string;
  certPem: string;
  keyPem: string;
  /** The whole file as parsed (known keys only), for merging into another kubeconfig. */
  file: KubeconfigFileContent;
}

/** The parsed form of a kubeconfig file. */
export type KubeconfigFileContent = z.infer<typeof KubeconfigFile>;

/** Why a kubeconfig Secret cannot be read; the message never quotes the text, which holds a private key. */
export class KubeconfigUnreadable extends Error {
  override name = "KubeconfigUnreadable";
}

const UNPARSABLE = "the kubeconfig Secret cannot be parsed; delete it and NICO issues a new one";

/**
 * The one reader of the kubeconfig NICO publishes (the `<cluster>-kubeconfig`
 * Secret): the reconciler, the workload connections and `nico kubeconfig`
 * all read it here. It follows `current-context` to its cluster and user and
 * takes only inline data (no file path, token or exec plugin); anything else
 * throws {@link KubeconfigUnreadable}. `refuse` judges the server before any
 * credential is read (an answer is the error thrown).
 *
 * @example
 * ```ts
 * import { parseIssuedKubeconfig, renderKubeconfig } from "./kubeconfig.ts";
 * const text = renderKubeconfig("c", "https://127.0.0.1:6443", "CA", { certPem: "CERT", keyPem: "KEY" });
 * parseIssuedKubeconfig(text).server; // "https://127.0.0.1:6443"
 * parseIssuedKubeconfig(text).keyPem; // "KEY"
 * ```
 */
export function parseIssuedKubeconfig(text: string, refuse?: (server: string) => string | undefined): IssuedKubeconfig {
  let file: KubeconfigFileContent;
  try {
    file = KubeconfigFile.parse(parseYaml(text));
  } catch {
    throw new KubeconfigUnreadable(UNPARSABLE);
  }
  const context = file["current-context"] ?? "";
  const ctx = file.contexts?.find((c) => c.name === context)?.context;
  const cluster = file.clusters?.find((c) => c.name === ctx?.cluster)?.cluster;
  const user = file.users?.find((u) => u.name === ctx?.user)?.user;
  if (!cluster?.server) throw new KubeconfigUnreadable("the kubeconfig names no server for its current context");
  const refused = refuse?.(cluster.server);
  if (refused) throw new Error(refused);
  const ca = cluster["certificate-authority-data"];
  const cert = user?.["client-certificate-data"];
  const key = user?.["client-key-data"];
  if (!ca || !cert || !key) {
    throw new KubeconfigUnreadable(
      "the kubeconfig lacks the inline CA or client certificate NICO writes; delete the Secret",
    );
  }
  try {
    return {
      context,
      server: cluster.server,
      caPem: decodeBase64(ca),
      certPem: decodeBase64(cert),
      keyPem: decodeBase64(key),
      file,
    };
  } catch {
    throw new KubeconfigUnreadable(UNPARSABLE);
  }
}

/**
 * The server and client certificate of a kubeconfig NICO wrote, or
 * `undefined` when {@link parseIssuedKubeconfig} cannot read it.
 *
 * @example
 * ```ts
 * import { readKubeconfig, renderKubeconfig } from "./kubeconfig.ts";
 * const text = renderKubeconfig("c", "https://127.0.0.1:6443", "CA", { certPem: "CERT", keyPem: "KEY" });
 * readKubeconfig(text)?.server; // "https://127.0.0.1:6443"
 * readKubeconfig("server: https://127.0.0.1:6443"); // undefined
 * ```
 */
export function readKubeconfig(text: string): { server: string; certPem: string } | undefined {
  try {
    const { server, certPem } = parseIssuedKubeconfig(text);
    return { server, certPem };
  } catch {
    return undefined;
  }
}

/**
 * Why the kubeconfig must be issued again, or `undefined` when it is fine:
 * missing, for another endpoint, signed by another CA, or under six months left.
 *
 * @example
 * ```ts
 * import { issueKubeconfig, reissueReason } from "./kubeconfig.ts";
 * import { createCa } from "../../lib/pki.ts";
 * const ca = await createCa({ commonName: "c-ca" });
 * const text = await issueKubeconfig("c", "https://127.0.0.1:6443", ca);
 * await reissueReason(text, "https://127.0.0.1:6443", ca.certPem, new Date()); // undefined
 * await reissueReason(text, "https://127.0.0.2:6443", ca.certPem, new Date()); // "endpoint changed to https://127.0.0.2:6443"
 * ```
 */
export async function reissueReason(
  existing: string | undefined,
  server: string,
  caPem: string,
  now: Date,
): Promise<string | undefined> {
  if (!existing) return "missing";
  const kc = readKubeconfig(existing);
  if (!kc) return "unreadable";
  if (kc.server !== server) return `endpoint changed to ${server}`;
  try {
    if (!await signedBy(kc.certPem, caPem)) return "signed by another CA";
    const left = certInfo(kc.certPem).notAfter.getTime() - now.getTime();
    if (left < RENEW_BEFORE_MS) return "client certificate expires within six months";
  } catch {
    return "unreadable client certificate";
  }
  return undefined;
}

/**
 * The server the published kubeconfig names now. A new endpoint is published
 * only once the control plane serves it (every control-plane node runs the
 * configuration that carries it); until then the kubeconfig keeps the server
 * it names, so a halted rollout never leaves it pointing at nothing.
 *
 * @example
 * ```ts
 * import { publishedServer } from "./kubeconfig.ts";
 * publishedServer("https://127.0.0.1:6443", "https://127.0.0.2:6443", false);
 * // { server: "https://127.0.0.1:6443", moving: true }
 * ```
 */
export function publishedServer(
  current: string | undefined,
  desired: string,
  controlPlaneServesDesired: boolean,
): { server: string; moving: boolean } {
  if (!current || current === desired || controlPlaneServesDesired) return { server: desired, moving: false };
  return { server: current, moving: true };
}
