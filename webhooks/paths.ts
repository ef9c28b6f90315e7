/** The URL paths NICO's webhook serves. */

/** Path of the validating webhook. */
export const VALIDATE_PATH = "/validate-kubernetescluster";
/** Path of the mutating (defaulting) webhook. */
export const MUTATE_PATH = "/mutate-kubernetescluster";
