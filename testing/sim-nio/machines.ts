/**
 * NIO's Machine controller, simulated: a Machine is probed on sight and
 * marked discoverable (unless a fault says otherwise). NIO v1 re-probes every
 * minute and rewrites the status twice each time (`Reconciling` on, then
 * off), so a watcher sees a steady stream of Machine updates that change
 * nothing it cares about.
 *
 * @module
 */
import { type Machine, MACHINES } from "../../core/contract/nio.ts";
import type { SimContext } from "./context.ts";
import { discoveredMachineStatus, setCondition } from "./status.ts";
import { writeMachineStatus } from "./writes.ts";

export function machineController(ctx: SimContext) {
  const probeMs = ctx.opts.machineProbeMs ?? 60_000;
  const probed = new Map<string, number>();

  async function reconcile(key: string, ns: string, name: string): Promise<void> {
    let m = await ctx.kube.get<Machine>(MACHINES, name, ns);
    if (!m) return void probed.delete(key);
    const before = reachable(m.status);
    // A probe (two status writes) once per interval; other events only keep discovery current.
    const probe = ctx.generation === "v1" && probeMs > 0 && Date.now() - (probed.get(key) ?? 0) >= probeMs;
    if (probe) {
      probed.set(key, Date.now());
      m = await reconciling(m, "True");
    }
    const opts = { generation: ctx.generation, discoverAll: ctx.opts.discoverAll ?? true };
    const next = discoveredMachineStatus(m, opts, new Date());
    if (probe) next.conditions = setCondition(next.conditions, reconcilingCondition(m, "False"), new Date());
    const written = await writeMachineStatus(ctx, m, next);
    const after = reachable(next);
    if (written !== m && after !== before && after !== undefined) {
      ctx.record(after ? "discovered" : "undiscoverable", m);
    }
    // The next probe, also when this pass was not one (its timer may fire a little early, or another event came).
    if (ctx.generation === "v1" && probeMs > 0) ctx.queue.addAfter(key, probed.get(key)! + probeMs - Date.now());
  }

  /** What NIO last said of reachability (v1 omits `discoverable: false`, so its condition says it). */
  function reachable(st: Machine["status"]): boolean | undefined {
    if (ctx.generation === "older") return st?.discoverable;
    const c = st?.conditions?.find((x) => x.type === "Discoverable");
    return c ? c.status === "True" : undefined;
  }

  function reconcilingCondition(m: Machine, status: "True" | "False") {
    return {
      type: "Reconciling",
      status,
      reason: status === "True" ? "Progressing" : "Succeeded",
      message: status === "True" ? "Reconciliation in progress" : "Reconciliation completed",
      observedGeneration: m.metadata.generation ?? 1,
    };
  }

  /** NIO v1's first status write of a probe. */
  async function reconciling(m: Machine, status: "True" | "False"): Promise<Machine> {
    const conditions = setCondition(m.status?.conditions, reconcilingCondition(m, status), new Date());
    return await writeMachineStatus(ctx, m, { ...m.status, conditions });
  }

  return { reconcile };
}
