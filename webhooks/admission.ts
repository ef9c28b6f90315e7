/**
 * admission.k8s.io/v1 AdmissionReview: the request NICO reads, the checks
 * that turn a malformed body into a clear 400, and the answers it sends.
 *
 * @module
 */

import { encodeBase64 as base64, isRecord } from "../lib/encoding.ts";
import type { JsonPatchOp } from "../lib/kube/patch.ts";

/** Longest `request.uid` answered: the API server sends a UID of 36 characters. */
export const MAX_UID_LENGTH = 128;

export const ADMISSION_API_VERSION = "admission.k8s.io/v1";
export const ADMISSION_KIND = "AdmissionReview";

/** The operations the API server sends. */
export type Operation = "CREATE" | "UPDATE" | "DELETE" | "CONNECT";

/** Group, version and kind as AdmissionRequest carries them. */
export interface GroupVersionKind {
  group: string;
  version: string;
  kind: string;
}

/** Who sent the request, as the API server authenticated them. */
export interface UserInfo {
  username: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}

/** The fields of an AdmissionRequest NICO reads. */
export interface AdmissionRequest {
  uid: string;
  kind: GroupVersionKind;
  operation: Operation;
  namespace?: string;
  name?: string;
  object?: unknown;
  oldObject?: unknown;
  dryRun?: boolean;
  /** The requesting user; absent when the body carried none. */
  userInfo?: UserInfo;
}

/** The AdmissionResponse NICO sends. */
export interface AdmissionResponse {
  uid: string;
  allowed: boolean;
  status?: { code: number; reason?: string; message: string };
  warnings?: string[];
  patchType?: "JSONPatch";
  /** Base64 of the JSON Patch. */
  patch?: string;
}

/** A full AdmissionReview answer. */
export interface AdmissionReviewResponse {
  apiVersion: typeof ADMISSION_API_VERSION;
  kind: typeof ADMISSION_KIND;
  response: AdmissionResponse;
}

/** A body that is not an AdmissionReview NICO can answer; the message says why. */
export class BadReview extends Error {
  override readonly name = "BadReview";
}

const OPERATIONS = new Set<string>(["CREATE", "UPDATE", "DELETE", "CONNECT"]);

/**
 * Parses the body of a webhook call into its request, or throws
 * {@link BadReview} saying what is wrong with it.
 */
export function parseReview(text: string): AdmissionRequest {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (err) {
    throw new BadReview(`the body is not valid JSON: ${(err as Error).message}`);
  }
  if (!isRecord(body)) throw new BadReview("the body must be a JSON object: an AdmissionReview");
  if (body.apiVersion !== ADMISSION_API_VERSION) {
    throw new BadReview(`apiVersion must be ${ADMISSION_API_VERSION}, got ${JSON.stringify(body.apiVersion ?? null)}`);
  }
  if (body.kind !== ADMISSION_KIND) {
    throw new BadReview(`kind must be ${ADMISSION_KIND}, got ${JSON.stringify(body.kind ?? null)}`);
  }
  const req = body.request;
  if (!isRecord(req)) throw new BadReview("request is missing: an AdmissionReview sent to a webhook carries a request");
  if (typeof req.uid !== "string" || req.uid === "") {
    throw new BadReview("request.uid is missing: the API server always sends one");
  }
  if (req.uid.length > MAX_UID_LENGTH) {
    // Echoed in the answer: a long one would make every answer as large as its request.
    throw new BadReview(`request.uid is longer than ${MAX_UID_LENGTH} characters: the API server sends a UID`);
  }
  if (typeof req.operation !== "string" || !OPERATIONS.has(req.operation)) {
    throw new BadReview(
      `request.operation must be CREATE, UPDATE, DELETE or CONNECT, got ${JSON.stringify(req.operation ?? null)}`,
    );
  }
  const kind = req.kind;
  if (!isRecord(kind) || typeof kind.kind !== "string" || typeof kind.version !== "string") {
    throw new BadReview("request.kind must name the group, version and kind of the object");
  }
  const operation = req.operation as Operation;
  if ((operation === "CREATE" || operation === "UPDATE") && !isRecord(req.object)) {
    throw new BadReview(`request.object is missing: a ${operation} carries the object`);
  }
  if (operation === "UPDATE" && !isRecord(req.oldObject)) {
    throw new BadReview("request.oldObject is missing: an UPDATE carries the object as it was");
  }
  const userInfo = parseUserInfo(req.userInfo);
  return {
    uid: req.uid,
    ...(userInfo ? { userInfo } : {}),
    kind: { group: typeof kind.group === "string" ? kind.group : "", version: kind.version, kind: kind.kind },
    operation,
    ...(typeof req.namespace === "string" ? { namespace: req.namespace } : {}),
    ...(typeof req.name === "string" ? { name: req.name } : {}),
    ...(req.object !== undefined && req.object !== null ? { object: req.object } : {}),
    ...(req.oldObject !== undefined && req.oldObject !== null ? { oldObject: req.oldObject } : {}),
    ...(typeof req.dryRun === "boolean" ? { dryRun: req.dryRun } : {}),
  };
}

function strings(v: unknown): string[] | undefined {
  return Array.isArray(v) && v.every((x) => typeof x === "string") ? v : undefined;
}

/** `request.userInfo`, keeping only well-formed fields. */
function parseUserInfo(v: unknown): UserInfo | undefined {
  if (!isRecord(v) || typeof v.username !== "string" || v.username === "") return undefined;
  const groups = strings(v.groups);
  const extra: Record<string, string[]> = {};
  if (isRecord(v.extra)) {
    for (const [k, values] of Object.entries(v.extra)) {
      const list = strings(values);
      if (list) extra[k] = list;
    }
  }
  return {
    username: v.username,
    ...(typeof v.uid === "string" && v.uid ? { uid: v.uid } : {}),
    ...(groups ? { groups } : {}),
    ...(Object.keys(extra).length ? { extra } : {}),
  };
}

/** Wraps a response in an AdmissionReview. */
export function review(response: AdmissionResponse): AdmissionReviewResponse {
  return { apiVersion: ADMISSION_API_VERSION, kind: ADMISSION_KIND, response };
}

/** Allows, with optional warnings and patch. */
export function allow(uid: string, warnings: string[] = [], patch: JsonPatchOp[] = []): AdmissionReviewResponse {
  return review({
    uid,
    allowed: true,
    ...(warnings.length ? { warnings } : {}),
    ...(patch.length ? { patchType: "JSONPatch" as const, patch: base64(JSON.stringify(patch)) } : {}),
  });
}

const REASONS: Record<number, string> = {
  400: "BadRequest",
  403: "Forbidden",
  500: "InternalError",
  503: "ServiceUnavailable",
};

/**
 * Refuses with one line per problem; `code` 403 for a refused object, 400
 * for a request NICO should never have been sent, 500/503 for its own trouble.
 */
export function deny(uid: string, problems: string[], warnings: string[] = [], code = 403): AdmissionReviewResponse {
  const reason = REASONS[code] ?? "InternalError";
  return review({
    uid,
    allowed: false,
    status: { code, reason, message: problems.join("\n") },
    ...(warnings.length ? { warnings } : {}),
  });
}

/** Base64 of a UTF-8 string (the one definition lives in `lib/encoding.ts`). */
export { base64 };
