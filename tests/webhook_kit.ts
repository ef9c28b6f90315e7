/** Fixtures shared by the admission webhook tests: objects, AdmissionReview bodies, the app on a static lookup, and the case runner. */
import {
  foreignConfig as fixtureForeignConfig,
  machine as fixtureMachine,
  type MachineOpts,
  ownedConfig as fixtureOwnedConfig,
} from "../testing/objects.ts";
import assert from "node:assert/strict";
import { configName } from "../core/contract/names.ts";
import { pointerKeys } from "../lib/kube/patch.ts";
import { type KubernetesClusterSpecInput } from "../crds/kubernetescluster.ts";
import type { Machine, NixosConfiguration } from "../core/contract/nio.ts";
import { staticLookup, type StaticObjects } from "../webhooks/lookup.ts";
import { staticAccess } from "../webhooks/authorize.ts";
import { webhookApp, type WebhookAppOptions } from "../webhooks/app.ts";
import { MUTATE_PATH, VALIDATE_PATH } from "../webhooks/paths.ts";

export const NS = "infra";
export const UID = "uid-prod";

// ---------------------------------------------------------------- builders

export function machine(name: string, o: MachineOpts = {}): Machine {
  return fixtureMachine(name, { namespace: NS, ...o });
}

/** A NixosConfiguration of cluster `cluster`, controlled by the cluster with `uid`. */
export function ownedConfig(
  cluster: string,
  m: string,
  role: "control-plane" | "worker",
  uid = UID,
): NixosConfiguration {
  return fixtureOwnedConfig(cluster, m, role, uid, NS);
}

export function foreignConfig(name: string, m: string): NixosConfiguration {
  return fixtureForeignConfig(name, m, NS);
}

export function cluster(spec: unknown, o: { name?: string; uid?: string; status?: unknown; deleting?: boolean } = {}) {
  return {
    apiVersion: "nico.homystack.com/v1alpha1",
    kind: "KubernetesCluster",
    metadata: {
      name: o.name ?? "prod",
      namespace: NS,
      uid: o.uid ?? UID,
      ...(o.deleting ? { deletionTimestamp: "2025-01-01T00:00:00Z" } : {}),
    },
    spec,
    ...(o.status ? { status: o.status } : {}),
  };
}

export const REPO = "https://git.example.test/flake.git";
export const withRepo = (spec: KubernetesClusterSpecInput): KubernetesClusterSpecInput => ({ gitRepo: REPO, ...spec });

export function reviewBody(
  op: "CREATE" | "UPDATE" | "DELETE",
  object: unknown,
  oldObject?: unknown,
  kind = "KubernetesCluster",
) {
  return {
    apiVersion: "admission.k8s.io/v1",
    kind: "AdmissionReview",
    request: {
      uid: "req-1",
      kind: { group: kind === "KubernetesCluster" ? "nico.homystack.com" : "", version: "v1alpha1", kind },
      resource: { group: "nico.homystack.com", version: "v1alpha1", resource: "kubernetesclusters" },
      operation: op,
      namespace: NS,
      name: "prod",
      userInfo: { username: "alice", uid: "u-1", groups: ["system:authenticated"] },
      ...(object === undefined ? {} : { object }),
      ...(oldObject === undefined ? {} : { oldObject }),
    },
  };
}

export interface Answer {
  status: number;
  text: string;
  // deno-lint-ignore no-explicit-any
  json: any;
}

export async function post(
  app: ReturnType<typeof webhookApp>,
  path: string,
  body: unknown,
  init: RequestInit = {},
): Promise<Answer> {
  const res = await app.request(path, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: typeof body === "string" ? body : JSON.stringify(body),
    ...init,
  });
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, text, json };
}

export function app(objects: StaticObjects = {}, opts: Partial<WebhookAppOptions> = {}) {
  return webhookApp({ lookup: staticLookup({ ...objects }), access: staticAccess([`alice:${NS}/git`]), ...opts });
}

/** Machines cp-1..cp-n and w-1..w-n, discoverable and labelled by role. */
export function fleet(cp: number, w = 0, o: MachineOpts = {}): Machine[] {
  return [
    ...Array.from({ length: cp }, (_, i) => machine(`cp-${i + 1}`, { labels: { role: "cp" }, ...o })),
    ...Array.from({ length: w }, (_, i) => machine(`w-${i + 1}`, { labels: { role: "worker" }, ...o })),
  ];
}

// ---------------------------------------------------------------- validation

export interface Case {
  name: string;
  objects?: StaticObjects;
  op?: "CREATE" | "UPDATE";
  object: unknown;
  oldObject?: unknown;
  options?: Partial<WebhookAppOptions>;
  /** Each refusal line must match, in order; `[]` means allowed. */
  errors: (string | RegExp)[];
  /** Each warning must match, in order. */
  warnings?: (string | RegExp)[];
}

export function check(actual: string[], expected: (string | RegExp)[], what: string) {
  assert.equal(actual.length, expected.length, `${what}: ${JSON.stringify(actual, null, 1)}`);
  expected.forEach((e, i) => {
    if (typeof e === "string") assert.equal(actual[i], e, what);
    else assert.match(actual[i]!, e, what);
  });
}

export const three = { controlPlane: { machines: ["cp-1", "cp-2", "cp-3"] } };

export const members = ["cp-1", "cp-2", "cp-3"];
export const ownedFleet = () => [
  ...members.map((n) => machine(n, { labels: { role: "cp" }, claim: "prod", applied: configName("prod", n) })),
  machine("cp-4", { labels: { role: "cp" } }),
  machine("cp-5", { labels: { role: "cp" } }),
  machine("cp-6", { labels: { role: "cp" } }),
];
export const ownedConfigs = (names = members) => names.map((n) => ownedConfig("prod", n, "control-plane"));
export const status = { bootstrapNode: "cp-1" };

export async function runCase(c: Case) {
  const a = app(c.objects, c.options);
  const res = await post(a, VALIDATE_PATH, reviewBody(c.op ?? "CREATE", c.object, c.oldObject));
  assert.equal(res.status, 200, res.text);
  const r = res.json.response;
  assert.equal(res.json.apiVersion, "admission.k8s.io/v1");
  assert.equal(res.json.kind, "AdmissionReview");
  assert.equal(r.uid, "req-1");
  const errors = r.allowed ? [] : String(r.status.message).split("\n");
  check(errors, c.errors, "refusals");
  // Each warning names its cluster first (kubectl does not); the rest of it is what the cases describe.
  const prefix = `KubernetesCluster ${NS}/prod: `; // the review's namespace and name (reviewBody)
  const warnings: string[] = r.warnings ?? [];
  for (const w of warnings) assert.ok(w.startsWith(prefix), `warning without its cluster: ${w}`);
  check(warnings.map((w) => w.slice(prefix.length)), c.warnings ?? [], "warnings");
  if (!r.allowed) {
    assert.equal(r.status.code, 403);
    assert.equal(r.status.reason, "Forbidden");
  }
  for (const line of [...errors, ...warnings.map((w) => w.slice(prefix.length))]) {
    assert.ok(!line.includes("\n") && (line.startsWith("spec") || line.startsWith("metadata")), line);
  }
}

/** Applies `add` operations (all the webhook sends). */
export function applyPatch(obj: unknown, ops: { op: string; path: string; value: unknown }[]): unknown {
  const out = structuredClone(obj) as Record<string, unknown>;
  for (const op of ops) {
    assert.equal(op.op, "add");
    const parts = pointerKeys(op.path);
    let at: Record<string, unknown> = out;
    for (const p of parts.slice(0, -1)) at = at[p] as Record<string, unknown>;
    assert.ok(!(parts.at(-1)! in at), `patch adds ${op.path}, which exists`);
    at[parts.at(-1)!] = op.value;
  }
  return out;
}

/** The JSON Patch the mutating endpoint answers for a CREATE (or an UPDATE of the object to itself). */
export async function mutate(
  object: unknown,
  opts: Partial<WebhookAppOptions> = {},
  operation: "CREATE" | "UPDATE" = "CREATE",
) {
  const res = await post(
    app({}, opts),
    MUTATE_PATH,
    operation === "CREATE" ? reviewBody("CREATE", object) : reviewBody("UPDATE", object, object),
  );
  assert.equal(res.status, 200, res.text);
  const r = res.json.response;
  assert.equal(r.allowed, true);
  if (r.patch === undefined) {
    assert.equal(r.patchType, undefined);
    return [];
  }
  assert.equal(r.patchType, "JSONPatch");
  return JSON.parse(atob(r.patch));
}
