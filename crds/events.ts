/**
 * The registry of every Kubernetes Event reason NICO records: its type, what
 * it means and what to do, as the condition registry (crds/conditions/) keeps
 * them for conditions. Events are posted only through the typed poster
 * (controllers/events.ts), which takes the type from here; the table in
 * docs/troubleshooting.md is generated from it (`deno task crds`), and a unit
 * test fails on a reason posted outside it or a page that differs.
 *
 * Three kinds of reasons: the ones listed in {@link EVENTS}; `Phase<phase>`,
 * when a cluster's phase changes; and the reasons of `Stalled=True`, when a
 * rollout halts or a problem only the user can fix stands in the way (the
 * Event repeats the condition's reason and message).
 *
 * @module
 */
import { type ReasonOf, reasonSpec, registeredReasons } from "./conditions/mod.ts";
import { markdownTable } from "./conditions/docs.ts";
import { type Phase, PHASES } from "./status.ts";

/** An Event's type. */
export type EventType = "Normal" | "Warning";

/** One Event reason: its type, what it means, what the user does. */
export interface EventSpec {
  type: EventType;
  means: string;
  todo: string;
}

const normal = (means: string, todo = "nothing"): EventSpec => ({ type: "Normal", means, todo });
const warning = (means: string, todo: string): EventSpec => ({ type: "Warning", means, todo });

/** The reasons NICO records by name. */
export const EVENTS = {
  ArgoCDRegistered: normal("NICO registered the cluster with Argo CD (`--argocd-namespace`): its cluster Secret there"),
  ArgoCDRegistrationFailed: warning(
    "the Argo CD cluster Secret could not be written or deleted (no such namespace, no rights there, a Secret of that name that is not NICO's); the cluster goes on",
    "fix what the message names; NICO tries again",
  ),
  ConfigurationDriftRepaired: warning(
    "a NixosConfiguration NICO owns was edited by hand; NICO restores its fields (as a rollout step, in the planner's order), naming them",
    "change the KubernetesCluster instead of its configurations",
  ),
  DrainTimeout: warning(
    "a drain ran past `spec.rollout.drain.timeout`: the rollout halts there (`onTimeout: Halt`) or goes on (`Proceed`)",
    "let the pods go (the PodDisruptionBudget the message names), or change the spec",
  ),
  DrainWaiting: normal(
    "a drain waits, with what for (a PodDisruptionBudget and the pods it holds; pods with emptyDir data); told again when that changes, at most every ten minutes otherwise",
  ),
  EtcdBackupFailed: warning(
    "an etcd backup job (a check of the store, a scheduled, pre-change or requested snapshot) failed, and why (the same again after 10 minutes at most)",
    "fix what the message names (see docs/backups.md); NICO tries again",
  ),
  EtcdBackupSkipped: warning(
    "with `beforeChanges: BestEffort`, a control-plane step went on without its pre-change snapshot, and why",
    "fix the store if you want the snapshot; see `EtcdBackedUp`",
  ),
  EtcdBackupTaken: normal("an etcd snapshot was written to the store (and older ones beyond `keep` deleted)"),
  EtcdLeaderMoved: normal("NICO moved etcd's leadership off a member before its node changes or leaves"),
  EtcdMemberRejoined: normal("in a restore of etcd, a control-plane node rejoined the restored cluster"),
  EtcdMemberRemoved: normal("NICO removed an etcd member: of a departing node, or an orphan (see `OrphanMember`)"),
  EtcdMembershipBlocked: warning(
    "etcd's membership cannot change safely now (quorum, a voter that does not answer); the control-plane steps wait",
    "bring the members the message names back",
  ),
  EtcdMembershipFailed: warning(
    "a leadership move or a member's removal failed; NICO tries again",
    "nothing, unless it repeats: then look at the members the message names",
  ),
  EtcdRestored: normal("in a restore of etcd, the bootstrap node restored the backup and its member answers"),
  IdentityKept: warning(
    "a re-key was asked for (`nico.homystack.com/regenerate-identity=true`) and nothing was lost: the tokens and CAs stay, the admin kubeconfig is re-issued",
    "to rotate by hand, follow the section above",
  ),
  IdentityRegenerated: warning(
    "a re-key asked for made a new token or CA for what was lost; nodes are reconfigured with it",
    "nothing",
  ),
  KubeconfigIssued: normal(
    "NICO wrote the admin kubeconfig Secret again (the message says why: expiry, endpoint, re-key)",
  ),
  LeftoverDecommissionRemoved: warning(
    "NIO left a decommission NixJob behind after removing a Machine's configuration; NICO deleted it before releasing the Machine",
    "nothing",
  ),
  MachinesReleased: normal("NICO released Machines the cluster no longer needs (NIO is done with them)"),
  NodeCordoned: normal("NICO cordoned a Node to drain it before its configuration changes or it leaves"),
  NodeDeleted: normal(
    "NICO deleted the Node of a departed machine, or one a restore brought back that names no machine",
  ),
  NodeUncordoned: normal("NICO uncordoned a Node it drained, Ready again after its update"),
  ReconcileError: warning(
    "a pass failed in a way NICO did not foresee (as `ReconcileError` in `Ready`); NICO retries",
    "read the message; report it if it stays",
  ),
  RemediationFinished: normal(
    "the replaced Machine left the cluster; it stays out of service until a person clears it",
  ),
  RemediationRefused: warning("NICO replaces no node now, and why (as in `Remediating`)", "see `Remediating`"),
  RemediationRemoving: normal("the unhealthy node's removal started"),
  RemediationSpareReady: normal("the replacement of an unhealthy node is Ready"),
  RemediationStarted: warning(
    "NICO took a Machine out of service to replace it: the node, the reason, what replaces it",
    "look at the Machine once it is out; clear its mark to use it again",
  ),
  RestoreFailed: warning(
    "a restore of etcd failed (the message says what was left as it was; see `Restoring` and `status.restore`)",
    "fix what the message names, then ask again with a new `requestId` (docs/recovery.md)",
  ),
  RestoreRefused: warning(
    "a restore of etcd was refused before anything was touched (a healthy quorum without `rewindHealthy`, no such backup, no store)",
    "see the message; set a new `requestId` once fixed",
  ),
  RestoreRejoinFailed: warning(
    "in a restore of etcd, a control-plane node failed to rejoin the restored cluster; the next waits",
    "see the node's apply (`nico describe`); NICO waits for it",
  ),
  RestoreStarted: normal("NICO took a restore of etcd (`spec.etcd.restore`)"),
  RestoreSucceeded: normal("a restore of etcd ended: every control-plane node is a member of the restored cluster"),
  RestoreUrlFailed: warning(
    "the backup's URL could not be presigned into the Secret `<cluster>-etcd-restore`; the restore waits",
    "fix the store or its Secrets the message names",
  ),
  SafetySnapshotTaken: normal(
    "before a restore of etcd, NICO took a snapshot that undoes it (`status.restore.safetySnapshot`)",
  ),
  ShardChanged: normal("this cluster is reconciled by another shard now (its shard label changed)"),
  ShardNotRunning: warning(
    "the cluster is labelled for a shard no NICO runs: nothing reconciles it",
    "run `nico run --shard <name>` (the Helm chart's shards value), or relabel the cluster",
  ),
} as const satisfies Record<string, EventSpec>;

/** A reason listed by name. */
export type NamedEventReason = keyof typeof EVENTS;
/** The reason of a phase change. */
export type PhaseEventReason = `Phase${Phase}`;
/** The reason of a halt or a problem only the user can fix: the reason of `Stalled=True`. */
export type StalledEventReason = ReasonOf<"Stalled", "True">;
/** Every reason NICO records. */
export type EventReason = NamedEventReason | PhaseEventReason | StalledEventReason;

/** The phase-change reasons, each with its spec. */
function phaseEvents(): [string, EventSpec][] {
  return PHASES.map((p) => [
    `Phase${p}`,
    p === "Failed"
      ? warning("the cluster's phase turned Failed (the message gives `Ready`'s)", "see the `Stalled` condition")
      : normal(`the cluster's phase turned ${p} (the message gives \`Ready\`'s)`),
  ]);
}

/** The reasons of `Stalled=True` not listed by name, each with its spec (from the condition registry). */
function stalledEvents(): [string, EventSpec][] {
  return registeredReasons().filter((r) => r.type === "Stalled" && r.spec.status === "True" && !(r.reason in EVENTS))
    .map((r) => [r.reason, warning(`told as \`Stalled\` turns True with this reason: ${r.spec.means}`, r.spec.todo)]);
}

/**
 * Every registered reason with its spec, by name.
 *
 * @example
 * ```ts
 * import { registeredEvents } from "./events.ts";
 * registeredEvents().find((e) => e.reason === "PhaseFailed")?.spec.type; // "Warning"
 * ```
 */
export function registeredEvents(): { reason: string; spec: EventSpec }[] {
  return [...Object.entries(EVENTS), ...phaseEvents(), ...stalledEvents()]
    .map(([reason, spec]) => ({ reason, spec }))
    .sort((a, b) => a.reason.localeCompare(b.reason));
}

/**
 * The spec of a reason; undefined when NICO records no Event of that reason.
 *
 * @example
 * ```ts
 * import { eventSpec } from "./events.ts";
 * eventSpec("NodeCordoned")?.type; // "Normal"
 * eventSpec("Nonsense"); // undefined
 * ```
 */
export function eventSpec(reason: string): EventSpec | undefined {
  if (reason in EVENTS) return EVENTS[reason as NamedEventReason];
  const phase = phaseEvents().find(([r]) => r === reason);
  if (phase) return phase[1];
  return reasonSpec("Stalled", "True", reason) ? stalledEvents().find(([r]) => r === reason)?.[1] : undefined;
}

/** Whether `reason` is one NICO records (a `Stalled` reason read back from a condition, say). */
export function isEventReason(reason: string): reason is EventReason {
  return eventSpec(reason) !== undefined;
}

export const EVENTS_BEGIN = "<!-- events:begin (generated from crds/events.ts by `deno task crds`; do not edit) -->";
export const EVENTS_END = "<!-- events:end -->";

/** The generated table of every Event reason, markers included. */
export function eventsSection(): string {
  const rows = registeredEvents().map(({ reason, spec }) => [`\`${reason}\``, spec.type, spec.means, spec.todo]);
  return [
    EVENTS_BEGIN,
    "",
    markdownTable(["reason", "type", "what it means", "what to do"], rows),
    "",
    EVENTS_END,
  ].join("\n");
}

/** `page` with its generated Events table replaced by {@link eventsSection}. */
export function withEvents(page: string): string {
  const begin = page.indexOf(EVENTS_BEGIN);
  const end = page.indexOf(EVENTS_END);
  if (begin < 0 || end < begin) {
    throw new Error(`docs/troubleshooting.md has no ${EVENTS_BEGIN} … ${EVENTS_END} section`);
  }
  return page.slice(0, begin) + eventsSection() + page.slice(end + EVENTS_END.length);
}

if (import.meta.main) {
  const path = new URL("../docs/troubleshooting.md", import.meta.url);
  await Deno.writeTextFile(path, withEvents(await Deno.readTextFile(path)));
  console.error("wrote the Events of docs/troubleshooting.md");
}
