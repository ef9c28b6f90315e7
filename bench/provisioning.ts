/**
 * Time to a fully applied cluster in both provisioning modes (prints figures;
 * not a timed test); `deno task bench` runs the same measurement at the end.
 * On the local control plane, NICO's cluster controller runs in-process and
 * the simulated NIO takes `--apply-ms` per apply (a NixOS install on real
 * hardware takes minutes). For each mode, `--clusters` clusters of 1
 * control-plane node and 4 workers are created at once; a cluster's time is
 * from its creation to the last of its nodes applied, reported as p50/max and
 * as a multiple of one apply.
 *
 * Run: deno run -A bench/provisioning.ts [--clusters 10] [--apply-ms 5000]
 *
 * @module
 */
import { parseArgs } from "node:util";
import { measureModes, modeLines } from "./scale/modes.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: { clusters: { type: "string", default: "10" }, "apply-ms": { type: "string", default: "5000" } },
});
const clusters = Number(values.clusters);
const applyMs = Number(values["apply-ms"]);
console.log(`${clusters} clusters of 1 + 4 nodes at once, simulated apply ${applyMs} ms, NICO in-process`);
console.log(modeLines(await measureModes(clusters, applyMs)).join("\n"));
