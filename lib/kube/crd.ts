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
  await crdsEstablished(client, crds.map((c) => c.metadata.name), opts);
}

/**
 * Waits until the CRDs named are Established, reading each one's conditions; throws after `timeoutMs` (default
 * 30 s). A CRD the API server has stored but not yet given a status is waited for, where `kubectl wait
 * --for=condition=Established` refuses at once ("accessor error: <nil> is of the type <nil>").
 */
export async function crdsEstablished(
  client: KubeClient,
  names: string[],
  opts: { timeoutMs?: number; signal?: AbortSignal } = {},
): Promise<void> {
  const timeoutMs = opts.timeoutMs ?? 30_000;
  const deadline = Date.now() + timeoutMs;
  for (const name of names) {
    while (true) {
      const got = await client.get<CrdStatus>(CRDS, name, undefined, { signal: opts.signal });
      if (got?.status?.conditions?.some((c) => c.type === "Established" && c.status === "True")) break;
      if (Date.now() > deadline) throw new Error(`CRD ${name} was not Established within ${timeoutMs / 1000} s`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}
