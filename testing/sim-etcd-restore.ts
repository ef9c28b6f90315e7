/**
 * The simulated hosts' part in a restore of etcd (./sim-etcd.ts), as the
 * flake contract asks (docs/flake-contract.md#restore-bringing-etcd-back-from-a-backup):
 * on an apply whose `cluster.nix` carries a `restore` block,
 *
 * - `restore` (the bootstrap node): the URL is read from the Secret behind
 *   `etcd-restore-url` when NIO's run begins (NIO writes the files then;
 *   ./sim-etcd.ts), the object downloaded after the build (a URL that expired
 *   meanwhile is refused by the store), the SHA-256 of its database
 *   checked against `cluster.nix`, and only then the member stopped, its
 *   data replaced by the real `etcdutl snapshot restore --bump-revision
 *   --mark-compacted` for the member list `cluster.nix` names, and started;
 *   a failed download or a wrong hash throws before the data is touched (the
 *   apply fails, as the flake's unit would);
 * - `rejoin`: the member stopped, its data removed, and a join of the
 *   restored cluster (through the hosts that restored or rejoined it).
 *
 * Each once per request id, as the contract says.
 *
 * @module
 */
import { createHash } from "node:crypto";
import { decodeBase64 } from "../lib/encoding.ts";
import type { KubeClient } from "../lib/kube/client.ts";
import { SECRETS } from "../lib/kube/resources.ts";
import type { Machine, NixosConfiguration } from "../core/contract/nio.ts";
import { askedRestore, clusterNixOf } from "../core/render/clusternix.ts";
import { ETCD_RESTORE_URL_FILE } from "../core/render/restore.ts";
import { installed } from "./installed.ts";

/** etcdutl, built from the etcd module pinned in testing/etcdtools/go.mod (its install script's default tool). */
export const etcdutl: () => Promise<string> = installed(new URL("./etcdtools/install.sh", import.meta.url));

/** How far a restore bumps the revision: above anything a test writes after a backup. */
export const BUMP_REVISION = 1_000_000_000;

/** What a node's `cluster.nix` asks of it for a restore. */
export interface RestorePart {
  requestId: string;
  role: "restore" | "rejoin";
  sha256: string;
  backup: string;
  /** `name=peerURL,…` of the restored cluster (`restore` only). */
  initialCluster: string;
}

/** The restore part a configuration asks of its node (undefined: none). */
export function restorePartOf(cfg: NixosConfiguration): RestorePart | undefined {
  const text = clusterNixOf(cfg);
  const asked = askedRestore(text);
  if (!asked || !text) return undefined;
  const field = (name: string) => new RegExp(`^ {4}${name} = "([^"\\\\]*)";$`, "m").exec(text)?.[1] ?? "";
  const members = [...text.matchAll(/^ {6}\{ name = "([^"\\]*)"; peerURL = "([^"\\]*)"; \}$/gm)];
  return {
    ...asked,
    sha256: field("sha256"),
    backup: field("backup"),
    initialCluster: members.map((m) => `${m[1]}=${m[2]}`).join(","),
  };
}

/** The presigned URL the configuration's `etcd-restore-url` file names (read from its Secret, as NIO would). */
export async function urlOf(management: KubeClient, cfg: NixosConfiguration): Promise<string> {
  const file = cfg.spec.additionalFiles.find((f) => f.path.split("/").pop() === ETCD_RESTORE_URL_FILE);
  if (file?.valueType !== "SecretRef") throw new Error(`no ${ETCD_RESTORE_URL_FILE} file: nothing to restore from`);
  type Data = { metadata: { name: string }; data?: Record<string, string> };
  const s = await management.get<Data>(SECRETS, file.secretRef.name, cfg.metadata.namespace);
  const url = s?.data?.[file.secretRef.key ?? "url"];
  if (!url) throw new Error(`the backup's URL is missing (Secret ${file.secretRef.name})`);
  return decodeBase64(url);
}

/**
 * The backup's URL as NIO wrote it to each host when its run began (the Secret read then): the host downloads it
 * after the build, however long that took. `write` at a run's start, `of` at its end (undefined: none written).
 */
export function writtenUrls(management: KubeClient) {
  const urls = new Map<string, string>();
  const keyOf = (cfg: NixosConfiguration, machine: Machine, requestId: string) =>
    `${cfg.metadata.namespace}/${cfg.metadata.name}/${machine.metadata.name}/${requestId}`;
  return {
    async write(cfg: NixosConfiguration, machine: Machine): Promise<void> {
      const part = restorePartOf(cfg);
      if (part?.role !== "restore") return;
      const key = keyOf(cfg, machine, part.requestId);
      await urlOf(management, cfg).then((u) => urls.set(key, u), () => urls.delete(key));
    },
    of(cfg: NixosConfiguration, machine: Machine): string | undefined {
      const part = restorePartOf(cfg);
      return part ? urls.get(keyOf(cfg, machine, part.requestId)) : undefined;
    },
  };
}

/**
 * Downloads the backup at `url` into `file` and checks its database's SHA-256; throws, naming what failed, before
 * anything else is touched.
 */
export async function download(url: string, part: RestorePart, file: string) {
  const res = await fetch(url).catch((err) => {
    throw new Error(`could not download backup ${part.backup}: ${(err as Error).message}`);
  });
  const bytes = new Uint8Array(await res.arrayBuffer());
  if (!res.ok) {
    const code = /<Code>([^<]*)<\/Code>/.exec(new TextDecoder().decode(bytes))?.[1];
    throw new Error(`could not download backup ${part.backup}: HTTP ${res.status}${code ? ` ${code}` : ""}`);
  }
  const got = createHash("sha256").update(bytes.subarray(0, Math.max(0, bytes.length - 32))).digest("hex");
  if (got !== part.sha256) {
    throw new Error(`sha256 mismatch for backup ${part.backup}: expected ${part.sha256}, got ${got}; nothing restored`);
  }
  await Deno.writeFile(file, bytes, { mode: 0o600 });
}

/** `etcdutl snapshot restore` of `file` into `dataDir` for the member `name` at `peer`, revision bumped. */
export async function restoreInto(file: string, dataDir: string, name: string, peer: string, initial: string) {
  const out = await new Deno.Command(await etcdutl(), {
    args: [
      "snapshot",
      "restore",
      file,
      `--data-dir=${dataDir}`,
      `--name=${name}`,
      `--initial-cluster=${initial}`,
      `--initial-advertise-peer-urls=${peer}`,
      `--bump-revision=${BUMP_REVISION}`,
      "--mark-compacted",
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) throw new Error(`etcdutl snapshot restore failed: ${new TextDecoder().decode(out.stderr).trim()}`);
}
