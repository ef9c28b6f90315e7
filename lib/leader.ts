/**
 * Leader election on a coordination.k8s.io/v1 Lease, in the way client-go
 * does it: acquire when the holder has not renewed within the lease
 * duration (as observed on our own clock), renew every retry period, give
 * up when renewing fails for the renew deadline, release on shutdown.
 *
 * Fencing: a {@link LeaderFence} says whether this replica may still write.
 * It holds for the renew deadline after the start of the last successful
 * renew, measured on the monotonic clock (which keeps counting while the
 * process is stopped, and ignores wall-clock jumps), so a leader paused past
 * its deadline finds out before its next write, not after its next renew.
 *
 * @module
 */
import { microTime } from "./kube/meta.ts";
import type { KubeClient } from "./kube/client.ts";
import { isConflict, isNotFound } from "./kube/errors.ts";
import { LEASES } from "./kube/resources.ts";
import { errorMessage, type Logger } from "./runtime/log.ts";
import { sleep } from "./runtime/sleep.ts";

export interface Lease {
  metadata: { name: string; namespace?: string; resourceVersion?: string };
  spec?: {
    holderIdentity?: string;
    leaseDurationSeconds?: number;
    acquireTime?: string;
    renewTime?: string;
    leaseTransitions?: number;
  };
}

/** Monotonic milliseconds. */
const monotonic = () => performance.now();

/** Whether this replica may still act as leader; give `holds` to the writing client as its write gate. */
export class LeaderFence {
  #until = -Infinity;

  /** True until the renew deadline of the last confirmed renew has passed. */
  holds(): boolean {
    return monotonic() < this.#until;
  }

  /** Milliseconds until it stops holding (zero or less once it does not hold). */
  remainingMs(): number {
    return this.#until - monotonic();
  }

  /** A renew that started at monotonic time `startedAt` succeeded: hold for `validMs` from then. */
  confirm(startedAt: number, validMs: number): void {
    this.#until = Math.max(this.#until, startedAt + validMs);
  }

  /** Leadership ended: refuse from now on. */
  revoke(): void {
    this.#until = -Infinity;
  }
}

export interface LeaderElectionOptions {
  client: KubeClient;
  namespace: string;
  name: string;
  identity: string;
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
  log: Logger;
  /** Confirmed on every successful renew, revoked when leadership ends (default: a private one). */
  fence?: LeaderFence;
  /** Called once leadership is won; `signal` aborts when it is lost or on shutdown. */
  onStartedLeading(signal: AbortSignal): Promise<void> | void;
  /** Called when leadership ends for any reason. */
  onStoppedLeading?(): void;
}

/**
 * Campaigns until `signal` aborts. Resolves after leadership (if any) ended
 * and the Lease was released. Leadership lost to a renew failure also
 * resolves; the caller decides whether to exit or campaign again.
 */
export async function runLeaderElection(
  opts: LeaderElectionOptions,
  signal: AbortSignal,
): Promise<"released" | "lost" | "stopped"> {
  const c: Campaign = {
    opts,
    leaseMs: opts.leaseDurationMs ?? 15_000,
    renewDeadline: opts.renewDeadlineMs ?? 10_000,
    retry: opts.retryPeriodMs ?? 2_000,
    fence: opts.fence ?? new LeaderFence(),
    observed: undefined,
  };
  // Campaign.
  while (!signal.aborted) {
    if (await attempt(c)) break;
    await sleep(c.retry * (1 + Math.random() * 0.2), signal).catch(() => {});
  }
  if (signal.aborted) return "stopped";
  return await lead(c, signal);
}

/** One candidate's campaign: its options, timings, fence, and the Lease as it last saw it change. */
interface Campaign {
  opts: LeaderElectionOptions;
  leaseMs: number;
  renewDeadline: number;
  retry: number;
  fence: LeaderFence;
  /** The holder and renew time last seen, and when (monotonic) they were first seen so. */
  observed: { holder: string | undefined; renew: string | undefined; at: number } | undefined;
}

/** Takes or renews the Lease; false while another holder's lease has not expired (as this process measured it). */
async function tryAcquireOrRenew(c: Campaign): Promise<boolean> {
  const { client, namespace, name, identity } = c.opts;
  const now = Date.now();
  const lease = await client.get<Lease>(LEASES, name, namespace);
  const mono = monotonic();
  const spec = {
    holderIdentity: identity,
    leaseDurationSeconds: Math.ceil(c.leaseMs / 1000),
    renewTime: microTime(now),
  };
  if (!lease) {
    await client.create<Lease>(LEASES, {
      metadata: { name, namespace },
      spec: { ...spec, acquireTime: microTime(now), leaseTransitions: 0 },
    });
    return true;
  }
  const s = lease.spec ?? {};
  if (!c.observed || c.observed.holder !== s.holderIdentity || c.observed.renew !== s.renewTime) {
    c.observed = { holder: s.holderIdentity, renew: s.renewTime, at: mono };
  }
  const held = s.holderIdentity && s.holderIdentity !== identity;
  const duration = (s.leaseDurationSeconds ?? Math.ceil(c.leaseMs / 1000)) * 1000;
  if (held && c.observed.at + duration > mono) return false;
  const mine = s.holderIdentity === identity;
  await client.replace<Lease>(LEASES, {
    metadata: { name, namespace, resourceVersion: lease.metadata.resourceVersion! },
    spec: {
      ...spec,
      acquireTime: mine && s.acquireTime ? s.acquireTime : microTime(now),
      leaseTransitions: (s.leaseTransitions ?? 0) + (mine ? 0 : 1),
    },
  });
  return true;
}

/** One try to take or renew the Lease; a success confirms the fence until the renew deadline. */
async function attempt(c: Campaign): Promise<boolean> {
  const started = monotonic();
  try {
    const ok = await tryAcquireOrRenew(c);
    if (ok) {
      c.fence.confirm(started, c.renewDeadline);
    }
    return ok;
  } catch (err) {
    if (!isConflict(err)) c.opts.log.error("leader election: lease update failed", { error: errorMessage(err) });
    return false;
  }
}

/** Leads: runs the work and renews until `signal` aborts or a renew deadline passes, then stops the work. */
async function lead(c: Campaign, signal: AbortSignal): Promise<"released" | "lost"> {
  const { opts, fence, retry } = c;
  const { client, namespace, name, identity, log } = opts;
  log.info("leader election: became leader", { lease: `${namespace}/${name}`, identity });
  const leading = new AbortController();
  const stopLeading = () => leading.abort();
  signal.addEventListener("abort", stopLeading, { once: true });
  const work = Promise.resolve().then(() => opts.onStartedLeading(leading.signal));
  let outcome: "released" | "lost" = "released";
  const lose = () => {
    if (leading.signal.aborted) return;
    fence.revoke();
    log.error("leader election: lost the lease (renew deadline passed)", { lease: `${namespace}/${name}` });
    outcome = "lost";
    leading.abort();
  };
  // A watchdog, so work is aborted at the deadline even while a renew request hangs.
  let watchdog: ReturnType<typeof setTimeout> | undefined;
  const arm = () => {
    watchdog = setTimeout(() => (fence.holds() ? arm() : lose()), Math.max(0, fence.remainingMs()));
  };
  arm();
  while (!leading.signal.aborted) {
    // Wake up no later than the deadline, so in-flight work is aborted on time.
    await sleep(Math.max(0, Math.min(retry, fence.remainingMs())), leading.signal).catch(() => {});
    if (leading.signal.aborted) break;
    // Checked before renewing: a process resumed after a pause must not act on a stale lease.
    if (!fence.holds()) {
      lose();
      break;
    }
    if (!(await attempt(c)) && !fence.holds()) lose();
  }
  clearTimeout(watchdog);
  signal.removeEventListener("abort", stopLeading);
  await work.catch((err) => log.error("leader work failed", { error: errorMessage(err) }));
  fence.revoke();
  opts.onStoppedLeading?.();
  if (outcome === "released") await release(client, namespace, name, identity, log);
  return outcome;
}

/** Gives the Lease up so a standby takes over at once rather than after it expires. */
async function release(
  client: KubeClient,
  namespace: string,
  name: string,
  identity: string,
  log: Logger,
): Promise<void> {
  try {
    const lease = await client.get<Lease>(LEASES, name, namespace);
    if (!lease || lease.spec?.holderIdentity !== identity) return;
    await client.replace<Lease>(LEASES, {
      metadata: { name, namespace, resourceVersion: lease.metadata.resourceVersion! },
      spec: { ...lease.spec, holderIdentity: "", leaseDurationSeconds: 1, renewTime: microTime(Date.now()) },
    });
    log.info("leader election: released the lease", { lease: `${namespace}/${name}` });
  } catch (err) {
    if (!isNotFound(err)) log.error("leader election: release failed", { error: errorMessage(err) });
  }
}
