/**
 * Installing CustomResourceDefinitions: server-side apply, then wait until
 * the API server reports each one `Established` (served).
 *
 * @module
 */
import type { KubeClient, KubeObject } from "./client.ts";
import { CRDS } from "./resources.ts";

type CrdStatus = KubeObject & { status?: { conditions?: { type: string; status: string }[] } };

/** Applies `crds` and waits until every one is Established; throws after `timeoutMs` (default 30 s). */
export async function applyCrds(
  client: KubeClient,
  crds: KubeObject[],
  opts: { timeoutMs?: number; signal?: AbortSignal } = {},
): Promise<void> {
  for (const crd of crds) await client.apply(CRDS, crd, { signal: opts.signal });
  const timeoutMs = opts.timeoutMs ?? 30_000;
  const deadline = Date.now() + timeoutMs;
  for (const crd of crds) {
    while (true) {
      const got = await client.get<CrdStatus>(CRDS, crd.metadata.name, undefined, { signal: opts.signal });
      if (got?.status?.conditions?.some((c) => c.type === "Established" && c.status === "True")) break;
      if (Date.now() > deadline) {
        throw new Error(`CRD ${crd.metadata.name} was not Established within ${timeoutMs / 1000} s`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}
