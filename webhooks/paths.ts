/** The URL paths NICO's webhook serves, and the one body limit of its server and app. */

/** Path of the validating webhook. */
export const VALIDATE_PATH = "/validate-kubernetescluster";
/** Path of the mutating (defaulting) webhook. */
export const MUTATE_PATH = "/mutate-kubernetescluster";

/** Largest AdmissionReview body: 3 MiB, the API server's own request limit (413 past it). */
export const MAX_BODY_BYTES = 3 * 1024 * 1024;
