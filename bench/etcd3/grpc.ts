/**
 * The npm `etcd3` client for bench/etcd_clients.ts, loaded by its etcd3 child alone (run with bench/etcd3/deno.json,
 * which pins `etcd3` and keeps its lock here, out of NICO's deno.lock).
 *
 * @module
 */
import type { Etcd3 } from "etcd3";
import { Buffer } from "node:buffer";
// Types only: the child running ../etcd_clients.ts loads this module from its top-level await, so a value import of
// it would wait on itself.
import type { Calls, Pems } from "../etcd_clients.ts";

/**
 * etcd3 balances across its hosts: one Etcd3 per member, so each request goes where it is meant to. Deno's TLS
 * takes no IP address as the server name gRPC sends, so it asks for the name each member's certificate also carries.
 */
export async function grpc(p: Pems, nameOf: (url: string) => string): Promise<Calls> {
  // Loaded here, so the gateway's child never loads it and the figures count its code too.
  const { Etcd3 } = await import("etcd3");
  const byUrl = new Map<string, Etcd3>();
  const at = (url: string) => {
    let c = byUrl.get(url);
    if (!c) {
      c = new Etcd3({
        hosts: [url],
        credentials: {
          rootCertificate: Buffer.from(p.caPem),
          certChain: Buffer.from(p.certPem),
          privateKey: Buffer.from(p.keyPem),
        },
        dialTimeout: 2_000,
        grpcOptions: { "grpc.ssl_target_name_override": nameOf(url), "grpc.default_authority": nameOf(url) },
      });
      byUrl.set(url, c);
    }
    return c;
  };
  return {
    members: (u) => at(u).cluster.memberList({}),
    status: (u) => at(u).maintenance.status({}),
    alarms: (u) => at(u).maintenance.alarm({ action: "Get", memberID: "0", alarm: "None" }),
    close: () => byUrl.forEach((c) => c.close()),
  };
}

