/**
 * What NICO keeps of one cluster's backups between passes (in its memory,
 * controllers/cluster/memory.ts): the state (core/backup/state.ts) and the
 * one job that may run at a time. A job runs off the pass (an upload may
 * take minutes) and wakes the cluster's key when it ends; forgetting the
 * cluster aborts it.
 *
 * @module
 */
import { afterJob, type BackupJobKind, type BackupState } from "../../../core/backup/state.ts";
import type { BackupsStatus } from "../../../crds/backup.ts";
import { type BackupJobEnd, type BackupJobRequest, runBackupJob } from "./job.ts";
import { WarningLimiter } from "../problem.ts";
import type { KeyPair } from "../../../lib/pki.ts";
import { etcdClientCertificate } from "../etcd/trust.ts";

/** What a job's end is told to (the key woken, Events posted). */
export type JobEnded = (end: BackupJobEnd, job: BackupJobKind) => void;

/** One cluster's backups: their state, and the job under way. */
export class BackupKeeper {
  state: BackupState;
  /** Failures told by a Warning Event: the same one again only after 10 minutes. */
  readonly warnings: WarningLimiter = new WarningLimiter();
  /** Since when each held control-plane step has waited for a snapshot (ms), by machine. */
  stepSince: ReadonlyMap<string, number> = new Map();
  #abort: AbortController | undefined;
  #done: Promise<void> | undefined;
  #cert: { caPem: string; pair: Promise<KeyPair> } | undefined;

  /** `p`: the cluster's `status.etcd.backups` as the last NICO wrote it (when it began, the request it answered). */
  constructor(since: Date, p?: BackupsStatus) {
    this.state = {
      listed: false,
      failures: 0,
      since: p?.since ?? since.toISOString(),
      ...(p?.request ? { answered: { token: p.request, record: p.requestBackup, failure: p.requestFailure } } : {}),
    };
  }

  /** NICO's client certificate for snapshots from the cluster's etcd, issued once per etcd CA. */
  clientCertificate(ca: KeyPair): Promise<KeyPair> {
    if (this.#cert?.caPem !== ca.certPem) this.#cert = { caPem: ca.certPem, pair: etcdClientCertificate(ca) };
    return this.#cert.pair;
  }

  /** A job is under way. */
  get busy(): boolean {
    return this.#abort !== undefined;
  }

  /**
   * Starts `request`'s job unless one runs; `store` is the store's spec it used, `token` the on-demand request it
   * answers. `ended` is called once it ended and the state took it in.
   */
  start(request: Omit<BackupJobRequest, "signal">, store: string, token: string | undefined, ended: JobEnded): void {
    if (this.#abort) return;
    const abort = this.#abort = new AbortController();
    const { job } = request;
    this.state = { ...this.state, running: { job, since: request.now.toISOString() } };
    this.#done = runBackupJob({ ...request, signal: abort.signal }).then((end) => {
      this.#abort = undefined;
      if (abort.signal.aborted) return;
      this.state = afterJob(this.state, { job, store, at: request.now, ...end, request: token });
      ended(end, job);
    });
  }

  /** Stops the job under way (the cluster is forgotten); what it wrote is aborted with it. */
  async stop(): Promise<void> {
    this.#abort?.abort();
    await this.#done;
  }
}
