/**
 * An etcd backup: one member's snapshot (./etcd/snapshot.ts), checked as it
 * streams, uploaded to an S3-compatible store (./s3/client.ts) by multipart
 * upload, and the store itself as the record of it.
 *
 * The object is the snapshot as `etcdctl snapshot save` writes it (the
 * database, then its 32-byte SHA-256), so `etcdutl snapshot restore` checks
 * it. Its user metadata says what it is (`x-amz-meta-`{@link METADATA}):
 * S3 fixes metadata when an upload begins and the hash is known only at its
 * end, so the SHA-256 is not in the metadata but in the object's own last
 * 32 bytes, read back with one small ranged GET ({@link listBackups}).
 * Nothing counts unless the upload completed, and it completes only after
 * the snapshot's stream ended with a matching hash.
 *
 * Which member, which key and when are the caller's decisions.
 *
 * @module
 */
import type { EtcdClient } from "./etcd/client.ts";
import { openSnapshot } from "./etcd/snapshot.ts";
import type { S3Client } from "./s3/client.ts";

/** A bucket of a store. */
export interface BackupStore {
  s3: S3Client;
  bucket: string;
}

/** A backup that exists: an object of the store, what it holds and why it was taken. */
export interface BackupRecord {
  /** The object's key. */
  key: string;
  /** The object's bytes (the database and its 32-byte SHA-256). */
  size: number;
  /** The member's revision when the snapshot began, decimal. */
  revision: string;
  /** The member's id, decimal. */
  member: string;
  /** The member's client URL. */
  endpoint: string;
  /** When the snapshot began, ISO 8601. */
  time: string;
  /** Why it was taken, as the caller said (such as `schedule`, `pre-change`, `manual`). */
  reason: string;
  /** The database's SHA-256, hex (etcd's own, checked while streaming). */
  sha256: string;
}

/** The user metadata names a backup object carries (`x-amz-meta-<name>`); `format` says it is one. */
export const METADATA = ["format", "revision", "member", "endpoint", "time", "reason"] as const;
/** The `format` of NICO's backup objects: an etcd snapshot with its SHA-256 trailer. */
export const FORMAT = "etcd-snapshot-sha256";

/** What {@link takeBackup} does. */
export interface BackupRequest {
  /** The object's key (any prefix included). */
  key: string;
  /** Why (printable ASCII; recorded in the object's metadata). */
  reason: string;
  /** The time recorded (default: now). */
  now?: Date;
  signal?: AbortSignal;
  /** Bytes per uploaded part (default 5 MiB). */
  partSize?: number;
  /** The longest the member may send nothing (default 30 s). */
  idleMs?: number;
  /** How the member sends its snapshot: gRPC (default) or the HTTP/JSON gateway (see ./etcd/snapshot.ts). */
  transport?: "grpc" | "gateway";
  /**
   * Gather each part in a buffer before sending it (two 5 MiB buffers, one filled while the other is sent), instead of
   * writing it as it arrives (the default: no buffer). See ../s3/multipart.ts.
   */
  buffered?: boolean;
}

/**
 * Takes a snapshot of the member at `endpoint` and uploads it to `store` under `request.key`; answers the record of
 * the object once it is complete. Throws on any failure (an `EtcdError` or `SnapshotError` from the member, an
 * `S3Error` from the store), and then no object was made under that key.
 */
export async function takeBackup(
  etcd: EtcdClient,
  endpoint: string,
  store: BackupStore,
  request: BackupRequest,
): Promise<BackupRecord> {
  const time = (request.now ?? new Date()).toISOString();
  const signal = request.signal ? { signal: request.signal } : {};
  const snapshot = await openSnapshot(etcd, endpoint, {
    ...signal,
    ...(request.idleMs ? { idleMs: request.idleMs } : {}),
    ...(request.transport ? { transport: request.transport } : {}),
  });
  const { source } = snapshot;
  const metadata = {
    format: FORMAT,
    revision: source.revision,
    member: source.memberId,
    endpoint,
    time,
    reason: request.reason,
  };
  const upload = store.s3.upload(store.bucket, request.key, snapshot, {
    metadata,
    contentType: "application/octet-stream",
    ...(request.buffered ? {} : { size: () => snapshot.expectedSize }), // each part written as it arrives
    ...(request.partSize ? { partSize: request.partSize } : {}),
    ...signal,
    beforeComplete: ({ size }) => {
      // The stream ended by itself only after its trailer matched; these hold unless something is badly wrong.
      if (!snapshot.sha256) throw new Error("the snapshot's SHA-256 was not checked");
      if (size !== snapshot.size) throw new Error(`uploaded ${size} bytes of a ${snapshot.size}-byte snapshot`);
    },
  });
  // A store that refuses the upload before reading the snapshot leaves the member's answer unread: end it.
  const done = await upload.catch(async (err) => {
    await snapshot.cancel();
    throw err;
  });
  const { revision, member, reason } = metadata;
  return { key: request.key, size: done.size, revision, member, endpoint, time, reason, sha256: snapshot.sha256! };
}

/**
 * The record of an object from its user metadata and its last 32 bytes, or undefined when it is not a backup
 * (another format, metadata missing, too small).
 */
export function recordOf(o: { key: string; size: number; metadata: Record<string, string>; tail: Uint8Array }) {
  const m = o.metadata;
  if (m.format !== FORMAT || o.tail.byteLength !== 32 || o.size <= 32) return undefined;
  if (!m.revision || !m.member || !m.time || m.reason === undefined) return undefined;
  const record: BackupRecord = {
    key: o.key,
    size: o.size,
    revision: m.revision,
    member: m.member,
    endpoint: m.endpoint ?? "",
    time: m.time,
    reason: m.reason,
    sha256: o.tail.toHex(),
  };
  return record;
}

/**
 * The backups under `prefix`, oldest first (by their recorded time): a listing, then one ranged GET per object for
 * its metadata and SHA-256 (a few at once). Objects that are not backups are left out.
 */
export async function listBackups(store: BackupStore, prefix: string, signal?: AbortSignal): Promise<BackupRecord[]> {
  const objects = await store.s3.list(store.bucket, prefix, signal);
  const out: BackupRecord[] = [];
  for (let i = 0; i < objects.length; i += 8) {
    const tails = objects.slice(i, i + 8).filter((o) => o.size > 32)
      .map((o) => store.s3.tail(store.bucket, o.key, 32, signal));
    for (const t of await Promise.all(tails)) {
      const r = recordOf({ key: t.key, size: t.size, metadata: t.metadata, tail: t.bytes });
      if (r) out.push(r);
    }
  }
  return out.sort((a, b) => (a.time < b.time ? -1 : a.time > b.time ? 1 : a.key < b.key ? -1 : 1));
}
