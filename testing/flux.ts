/**
 * The CRDs of the Flux controllers pinned in testing/flux/go.mod (Kustomization, HelmRelease), fetched by
 * testing/flux/install.sh from the Go module proxy into a cache outside the repo, for checking the Flux recipes
 * of deploy/gitops/ against Flux's own schemas on a real API server.
 *
 * @module
 */
import { installed } from "./installed.ts";

/** The folder holding the CRD files; the first call may fetch them (seconds, once). */
export const fluxCrdsPath: () => Promise<string> = installed(new URL("./flux/install.sh", import.meta.url));
