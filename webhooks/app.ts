/**
 * The admission webhook as a Hono app: `POST /validate-kubernetescluster`
 * and `POST /mutate-kubernetescluster`, speaking admission.k8s.io/v1.
 *
 * A body that is not an AdmissionReview NICO can read gets a 400 (413 when
 * too large) with the reason; any failure after the request's uid is known
 * answers `allowed: false` with the reason, so the API server never waits
 * out its timeout.
 *
 * @module
 */
import { type Context, Hono, type MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";
import { HTTPException } from "hono/http-exception";
import { GROUP, KIND } from "../crds/kubernetescluster.ts";
import { errorMessage, type Logger, silentLogger } from "../lib/runtime/log.ts";
import type { HostPolicy } from "../lib/git/hosts.ts";
import type { Metrics } from "../lib/metrics.ts";
import { type AdmissionRequest, allow, BadReview, deny, parseReview } from "./admission.ts";
import type { SecretAccessCheck } from "./authorize.ts";
import { defaultingPatch } from "./defaults.ts";
import { SHARD_LABEL } from "../core/contract/labels.ts";
import { namespaceShardProblem, type NamespaceShards, shardLabelProblem } from "../core/contract/shards.ts";
import { MAX_BODY_BYTES, MUTATE_PATH, VALIDATE_PATH } from "./paths.ts";

export { MAX_BODY_BYTES };
import { type AdmissionLookup, LookupNotReady } from "./lookup.ts";
import { endpointOf, needsValidation, type SecretAccess, secretToAuthorize, validateCluster } from "./validate.ts";
import { backupSecretsToAuthorize } from "./backup_rules.ts";

/** Options of {@link webhookApp}. */
export interface WebhookAppOptions {
  /** Cache reads: Machines, NixosConfigurations, clusters. */
  lookup: AdmissionLookup;
  /** Whether the requesting user may read the Secret a cluster names (a SubjectAccessReview). */
  access: SecretAccessCheck;
  /** Hosts gitRepo may name (`--git-allowed-hosts`); default: public hosts only. */
  gitAllowedHosts?: HostPolicy | undefined;
  /** The shards each listed namespace may use (`--namespace-shards`); absent: any. */
  namespaceShards?: NamespaceShards | undefined;
  /** Request counters and latency, labelled by route (unknown paths share one label). */
  metrics?: Pick<Metrics, "webhookRequests" | "webhookLatency">;
  /** Written to `spec.gitRepo` when a cluster names none. */
  defaultGitRepo?: string | undefined;
  log?: Logger;
  /** Largest body accepted (default {@link MAX_BODY_BYTES}). */
  maxBodyBytes?: number;
  /** How long the access check may take before the request is refused (default 2 s; the API server waits 5 s). */
  accessCheckTimeoutMs?: number;
}

/** How a request ended, for the metrics. */
export type Outcome = "allowed" | "denied" | "error" | "ok";

/** Hono variables of the app: the request uid once read, and the outcome once known. */
export type WebhookEnv = { Variables: { uid?: string; outcome?: Outcome } };
type Env = WebhookEnv;

function wrongResource(req: AdmissionRequest): string | undefined {
  if (req.kind.group === GROUP && req.kind.kind === KIND) return undefined;
  const got = `${req.kind.group ? `${req.kind.group}/` : ""}${req.kind.version} ${req.kind.kind}`;
  return `this webhook admits only ${GROUP} ${KIND} objects, not ${got}; fix the rules of the webhook configuration`;
}

async function checkAccess(
  access: SecretAccessCheck,
  req: AdmissionRequest,
  name: string,
  timeoutMs: number,
): Promise<SecretAccess> {
  const user = req.userInfo;
  if (!user) return { error: "the AdmissionReview names no user" };
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<SecretAccess>((resolve) => {
    timer = setTimeout(() => resolve({ error: `no answer from the API server within ${timeoutMs} ms` }), timeoutMs);
  });
  try {
    return await Promise.race([
      access.canGetSecret(user, req.namespace ?? "", name).then((d): SecretAccess => ({
        allowed: d.allowed,
        user: user.username,
      })),
      timeout,
    ]);
  } catch (err) {
    return { error: errorMessage(err) };
  } finally {
    clearTimeout(timer);
  }
}

/** The routes NICO serves; every other path is counted as `other`, so labels stay bounded. */
const ROUTES = new Set([VALIDATE_PATH, MUTATE_PATH, "/healthz"]);

/** Counts every request by route and outcome and times it. */
export function meterRequests(metrics: Pick<Metrics, "webhookRequests" | "webhookLatency">): MiddlewareHandler<Env> {
  return async (c, next) => {
    const path = ROUTES.has(c.req.path) ? c.req.path : "other";
    const end = metrics.webhookLatency.startTimer({ path });
    try {
      await next();
    } finally {
      end();
      const outcome = c.get("outcome") ?? (c.res.status < 400 ? "ok" : "error");
      metrics.webhookRequests.inc({ path, outcome });
    }
  };
}

/** Answers with `review`, noting its outcome for the metrics. */
function answer(c: Context<Env>, review: ReturnType<typeof allow>): Response {
  c.set("outcome", review.response.allowed ? "allowed" : "denied");
  return c.json(review);
}

/** The AdmissionReview's request (its uid noted for errors); a 400 when the body is not one. */
async function readReview(c: Context<Env>): Promise<AdmissionRequest> {
  let req: AdmissionRequest;
  try {
    req = parseReview(await c.req.text());
  } catch (err) {
    if (err instanceof BadReview) throw new HTTPException(400, { message: `bad AdmissionReview: ${err.message}` });
    throw err;
  }
  c.set("uid", req.uid);
  return req;
}

/** `POST /validate-kubernetescluster`: the cluster checked against the caches and the user's Secret access. */
async function validate(c: Context<Env>, opts: WebhookAppOptions): Promise<Response> {
  const log = opts.log ?? silentLogger;
  const started = performance.now();
  const req = await readReview(c);
  const fields = { uid: req.uid, operation: req.operation, namespace: req.namespace, name: req.name };
  const bad = wrongResource(req);
  if (bad) return answer(c, deny(req.uid, [bad], [], 400));
  if (req.operation !== "CREATE" && req.operation !== "UPDATE") return answer(c, allow(req.uid));
  const shardProblem = newShardLabelProblem(req.object, req.oldObject, req.namespace ?? "", opts.namespaceShards);
  if (shardProblem) {
    log.info("refused", { ...fields, problems: [shardProblem] });
    return answer(c, deny(req.uid, [shardProblem]));
  }
  // Metadata-only updates and updates during deletion pass without reading any cache.
  if (!needsValidation(req.operation, req.object, req.oldObject)) return answer(c, allow(req.uid));
  const ns = req.namespace ?? "";
  const { lookup } = opts;
  const secret = secretToAuthorize(req.operation, req.object, req.oldObject);
  const accessTimeout = opts.accessCheckTimeoutMs ?? 2000;
  const endpoint = endpointOf(req.object);
  const verdict = validateCluster({
    operation: req.operation,
    namespace: ns,
    object: req.object,
    oldObject: req.oldObject,
    machines: lookup.machines(ns),
    configurations: lookup.configurations(ns),
    clusters: lookup.clusters(ns),
    endpointUsers: endpoint === undefined ? [] : lookup.endpointUsers(endpoint.key),
    endpointMachines: endpoint === undefined ? [] : lookup.machinesAt(endpoint.host),
    credentialsAccess: secret ? await checkAccess(opts.access, req, secret, accessTimeout) : undefined,
    backupAccess: await backupAccess(opts.access, req, accessTimeout),
    defaultGitRepo: opts.defaultGitRepo,
    gitAllowedHosts: opts.gitAllowedHosts,
  });
  const ms = Math.round((performance.now() - started) * 10) / 10;
  // kubectl prints warnings without the object they are about: in a multi-document apply, name it.
  const warnings = verdict.warnings.map((w) => `KubernetesCluster ${ns}/${req.name ?? "(new)"}: ${w}`);
  if (verdict.errors.length) {
    log.info("refused", { ...fields, problems: verdict.errors, ms });
    return answer(c, deny(req.uid, verdict.errors, warnings));
  }
  log.debug("allowed", { ...fields, warnings: warnings.length, ms });
  return answer(c, allow(req.uid, warnings));
}

/** The access checks of the backup store's Secrets the request names anew (webhooks/backup_rules.ts). */
async function backupAccess(access: SecretAccessCheck, req: AdmissionRequest, timeoutMs: number) {
  const names = Object.entries(backupSecretsToAuthorize(req.operation, req.object, req.oldObject));
  const checked = await Promise.all(names.map(([, name]) => checkAccess(access, req, name, timeoutMs)));
  return Object.fromEntries(names.map(([field, name], i) => [field, { name, access: checked[i]! }]));
}

/** What is wrong with a shard label the request sets or changes (one it leaves as it was is not judged again). */
function newShardLabelProblem(
  object: unknown,
  oldObject: unknown,
  namespace: string,
  allowed: NamespaceShards | undefined,
): string | undefined {
  const labels = (o: unknown) => (o as { metadata?: { labels?: Record<string, string> } } | null)?.metadata?.labels;
  if (labels(object)?.[SHARD_LABEL] === labels(oldObject)?.[SHARD_LABEL]) return undefined;
  return shardLabelProblem(labels(object)) ?? namespaceShardProblem(namespace, labels(object), allowed);
}

/** `POST /mutate-kubernetescluster`: the defaults, as a JSON patch. */
async function mutate(c: Context<Env>, opts: WebhookAppOptions): Promise<Response> {
  const log = opts.log ?? silentLogger;
  const req = await readReview(c);
  const bad = wrongResource(req);
  if (bad) return answer(c, deny(req.uid, [bad], [], 400));
  if (req.operation !== "CREATE" && req.operation !== "UPDATE") return answer(c, allow(req.uid));
  const patch = defaultingPatch(req.object, { defaultGitRepo: opts.defaultGitRepo, operation: req.operation });
  if (patch.length) log.debug("defaulted", { uid: req.uid, name: req.name, paths: patch.map((p) => p.path) });
  return answer(c, allow(req.uid, [], patch));
}

/** The webhook's Hono app. */
export function webhookApp(opts: WebhookAppOptions): Hono<Env> {
  const log = opts.log ?? silentLogger;
  const maxSize = opts.maxBodyBytes ?? MAX_BODY_BYTES;
  const app = new Hono<Env>();
  if (opts.metrics) app.use(meterRequests(opts.metrics));
  const limit = bodyLimit({
    maxSize,
    onError: () => {
      throw new HTTPException(413, { message: `bad AdmissionReview: the body is larger than ${maxSize} bytes` });
    },
  });
  app.post(VALIDATE_PATH, limit, (c) => validate(c, opts));
  app.post(MUTATE_PATH, limit, (c) => mutate(c, opts));
  app.get("/healthz", (c) => c.text("ok"));
  app.notFound((c) => c.text(`not found: NICO's webhook serves POST ${VALIDATE_PATH} and POST ${MUTATE_PATH}`, 404));

  app.onError((err, c) => {
    if (err instanceof HTTPException) return c.text(err.message, err.status);
    const uid = c.get("uid");
    const notReady = err instanceof LookupNotReady;
    log.error("admission failed", { uid, path: c.req.path, error: errorMessage(err) });
    const message = notReady ? errorMessage(err) : `NICO's webhook could not check this object: ${errorMessage(err)}`;
    if (uid) {
      c.set("outcome", "error");
      return c.json(deny(uid, [message], [], notReady ? 503 : 500));
    }
    return c.text(message, 500);
  });
  return app;
}
