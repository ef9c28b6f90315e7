/**
 * etcd's own tools as the judge of the snapshots NICO makes (built from the
 * etcd modules pinned in testing/etcdtools/go.mod, the envtest's etcd
 * version, by testing/etcdtools/install.sh): `etcdutl snapshot status`
 * reads the database, and `etcdutl snapshot restore` checks the SHA-256
 * trailer (a snapshot without one, or with a wrong one, is refused) and
 * builds a data folder from it. `etcdctl` is the benchmark's yardstick.
 *
 * @module
 */

/** A tool's path; the first call may build it (flock-guarded, a minute or two once). */
function tool(name: "etcdutl" | "etcdctl"): () => Promise<string> {
  let path: Promise<string> | undefined;
  const script = new URL("./etcdtools/install.sh", import.meta.url).pathname;
  return () =>
    path ??= (async () => {
      const out = await new Deno.Command("bash", { args: [script, name], stdout: "piped", stderr: "inherit" }).output();
      if (!out.success) throw new Error(`testing/etcdtools/install.sh ${name} failed; see its output above`);
      return new TextDecoder().decode(out.stdout).trim().split("\n").pop()!;
    })();
}

export const etcdutlPath: () => Promise<string> = tool("etcdutl");
export const etcdctlPath: () => Promise<string> = tool("etcdctl");

/** What `etcdutl snapshot status -w json` says of a snapshot file. */
export interface SnapshotStatus {
  hash: number;
  revision: number;
  totalKey: number;
  totalSize: number;
  version: string;
}

async function run(bin: string, args: string[]): Promise<{ ok: boolean; stdout: string; stderr: string }> {
  const out = await new Deno.Command(bin, { args, stdout: "piped", stderr: "piped" }).output();
  const dec = new TextDecoder();
  return { ok: out.success, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

/**
 * Judges the snapshot file at `path` as etcd would: its status (a readable database), then a restore into a scratch
 * folder (which checks the SHA-256 trailer). Throws with etcdutl's words when either refuses it.
 */
export async function judgeSnapshot(path: string): Promise<SnapshotStatus> {
  const bin = await etcdutlPath();
  const status = await run(bin, ["snapshot", "status", path, "-w", "json"]);
  if (!status.ok) throw new Error(`etcdutl snapshot status refuses ${path}: ${status.stderr.trim()}`);
  const scratch = await Deno.makeTempDir({ prefix: "nico-restore-" });
  try {
    const restore = await run(bin, ["snapshot", "restore", path, `--data-dir=${scratch}/data`]);
    if (!restore.ok) throw new Error(`etcdutl snapshot restore refuses ${path}: ${restore.stderr.trim()}`);
  } finally {
    await Deno.remove(scratch, { recursive: true }).catch(() => {});
  }
  return JSON.parse(status.stdout) as SnapshotStatus;
}
