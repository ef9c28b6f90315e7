/**
 * Which NIO is installed, asked of the API server: the NixosConfiguration CRD
 * (NIO v1's schema has fields the older one lacks), else API discovery (NIO v1
 * serves NixCronJobs), unless the user says (`--nio-generation`).
 *
 * @module
 */
import type { KubeClient } from "../lib/kube/client.ts";
import { isNotFound } from "../lib/kube/errors.ts";
import { CRDS } from "../lib/kube/resources.ts";
import { NIO_GROUP, type NioGeneration, nioGenerationOfCrd, NIXOS_CONFIGURATION_CRD } from "../core/contract/nio.ts";

/** A generation and how NICO knows it, for the startup log and `nico describe`. */
export interface DetectedNio {
  generation: NioGeneration;
  source: string;
}

/** `auto`, or the generation the user forces. */
export type NioGenerationFlag = NioGeneration | "auto";

/** Detects the installed NIO; `forced` (not `auto`) wins without asking. */
export async function detectNioGeneration(
  client: KubeClient,
  forced: NioGenerationFlag = "auto",
): Promise<DetectedNio> {
  if (forced !== "auto") return { generation: forced, source: "set by --nio-generation" };
  let why = "";
  try {
    const crd = await client.get(CRDS, NIXOS_CONFIGURATION_CRD);
    const g = crd && nioGenerationOfCrd(crd);
    if (g) return { generation: g, source: `the ${NIXOS_CONFIGURATION_CRD} CRD's schema` };
    why = crd ? "its CRD has no schema NICO can read" : "its CRD is not installed";
  } catch (err) {
    why = `its CRD cannot be read (${(err as Error).message})`;
  }
  try {
    const res = await client.request<{ resources?: { name: string }[] }>("GET", `/apis/${NIO_GROUP}/v1alpha1`);
    const names = new Set((res?.resources ?? []).map((r) => r.name));
    if (names.has("nixosconfigurations")) {
      const generation = names.has("nixcronjobs") ? "v1" : "older";
      return { generation, source: `API discovery (${why})` };
    }
  } catch {
    // Nothing served: NIO is not installed (yet).
  }
  return { generation: "v1", source: `NIO is not installed (${why}); assuming NIO v1` };
}

/**
 * The resources of NIO's API group the API server serves (plural names), from API discovery: none when the group
 * is not served at all; undefined when discovery could not be asked (NICO then assumes NIO is whole).
 */
export async function servedNioResources(client: KubeClient): Promise<string[] | undefined> {
  try {
    const res = await client.request<{ resources?: { name: string }[] }>("GET", `/apis/${NIO_GROUP}/v1alpha1`);
    return (res?.resources ?? []).map((r) => r.name).filter((n) => !n.includes("/"));
  } catch (err) {
    return isNotFound(err) ? [] : undefined;
  }
}
