/**
 * What `nico run` finds out for its trust boundaries: NICO's own addresses (refused as targets, as
 * `--management-cidrs`), and which public root CAs Deno adds to every TLS client (logged at start).
 *
 * @module
 */
import { parseCidrList } from "../controllers/cluster/workload/targets.ts";

/**
 * Which root CAs Deno adds to every TLS client beyond the CAs NICO gives it (`DENO_TLS_CA_STORE`, default
 * `mozilla`; `DENO_CERT`), or `undefined` when none: then a workload cluster's or etcd member's certificate must
 * come from that cluster's own CA.
 *
 * @example
 * ```ts
 * import { publicRoots } from "./trust.ts";
 * publicRoots({ DENO_TLS_CA_STORE: "" }); // undefined
 * publicRoots({}); // "DENO_TLS_CA_STORE unset: mozilla"
 * ```
 */
export function publicRoots(env: Record<string, string | undefined>): string | undefined {
  const stores = env.DENO_TLS_CA_STORE;
  const listed = stores === undefined ? ["DENO_TLS_CA_STORE unset: mozilla"] : stores.split(",").map((x) => x.trim())
    .filter((x) => x !== "").map((x) => `DENO_TLS_CA_STORE=${x}`);
  const all = [...listed, ...(env.DENO_CERT ? ["DENO_CERT"] : [])];
  return all.length ? all.join(", ") : undefined;
}

/**
 * NICO's own addresses (its network interfaces but loopback, which is refused anyway) and the in-cluster API
 * server's Service address: refused as targets, whatever --management-cidrs says.
 */
export function ownAddresses(env: Record<string, string | undefined>): string[] {
  const out: string[] = [];
  try {
    for (const i of Deno.networkInterfaces()) {
      if (!i.address.startsWith("127.") && i.address !== "::1") out.push(i.address);
    }
  } catch {
    // no sys permission: the flag is all there is
  }
  const svc = env.KUBERNETES_SERVICE_HOST;
  if (svc) out.push(svc);
  return out.map((a) => a.replace(/%.*$/, "")).filter((a) => {
    try {
      return parseCidrList(a) !== undefined;
    } catch {
      return false;
    }
  });
}
