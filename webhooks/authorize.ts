/**
 * Authorization of the references a cluster makes: a user who may edit
 * KubernetesClusters must not make NICO use a Secret they could not read
 * themselves. The webhook asks the API server with a SubjectAccessReview
 * for the user of the admission request; it never reads the Secret, so
 * the answer says nothing about whether the Secret exists.
 *
 * @module
 */
import type { KubeClient } from "../lib/kube/client.ts";
import type { UserInfo } from "./admission.ts";

/** The answer of an access check. */
export interface AccessDecision {
  allowed: boolean;
  /** The authorizer's reason, when it gave one. */
  reason?: string;
}

/** Asks whether `user` may `get` Secret `name` in `namespace`. */
export interface SecretAccessCheck {
  canGetSecret(user: UserInfo, namespace: string, name: string): Promise<AccessDecision>;
}

interface SubjectAccessReviewStatus {
  status?: { allowed?: boolean; denied?: boolean; reason?: string; evaluationError?: string };
}

/** The SubjectAccessReview body for `user` getting one Secret. */
export function secretAccessReview(user: UserInfo, namespace: string, name: string): Record<string, unknown> {
  return {
    apiVersion: "authorization.k8s.io/v1",
    kind: "SubjectAccessReview",
    spec: {
      user: user.username,
      ...(user.uid ? { uid: user.uid } : {}),
      ...(user.groups?.length ? { groups: user.groups } : {}),
      ...(user.extra && Object.keys(user.extra).length ? { extra: user.extra } : {}),
      resourceAttributes: { namespace, verb: "get", group: "", version: "v1", resource: "secrets", name },
    },
  };
}

/** A check through the API server (NICO needs `create` on `subjectaccessreviews`). */
export function subjectAccessReviews(client: KubeClient): SecretAccessCheck {
  return {
    async canGetSecret(user, namespace, name) {
      const answer = await client.request<SubjectAccessReviewStatus>(
        "POST",
        "/apis/authorization.k8s.io/v1/subjectaccessreviews",
        { body: secretAccessReview(user, namespace, name) },
      );
      const s = answer?.status ?? {};
      const reason = s.reason || s.evaluationError;
      return { allowed: s.allowed === true && s.denied !== true, ...(reason ? { reason } : {}) };
    },
  };
}

/** A check over fixed grants `username:namespace/name` (tests and benchmarks). */
export function staticAccess(grants: string[]): SecretAccessCheck {
  const set = new Set(grants);
  return {
    canGetSecret: (user, ns, name) => Promise.resolve({ allowed: set.has(`${user.username}:${ns}/${name}`) }),
  };
}
