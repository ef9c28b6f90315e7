/**
 * Run by tests/unit/compact_test.ts with `--v8-flags=--allow-natives-syntax`: prints, as JSON, whether V8 keeps
 * fast properties for each object the caches' trims answer (a slow dictionary is about three times the size).
 */
import { without } from "../lib/runtime/compact.ts";
import { dropJobSpec, dropMachineFacts, keepTargetOnly } from "../controllers/cluster/controller.ts";

const fast = new Function("o", "return %HasFastProperties(o)") as (o: unknown) => boolean;
const parse = (o: unknown) => JSON.parse(JSON.stringify(o));
const meta = { name: "a", namespace: "n", uid: "u", resourceVersion: "1", labels: { x: "y" }, managedFields: [{}] };

const deleted = parse(meta);
delete deleted.managedFields;
const job = dropJobSpec(parse({ apiVersion: "batch/v1", kind: "Job", metadata: meta, spec: {}, status: {} }));
const machine = dropMachineFacts(parse({ metadata: meta, status: { discoverable: true, hardwareFacts: {} } }));
const config = keepTargetOnly(parse({ metadata: meta, spec: { machineRef: { name: "m" } }, status: {} }));
console.log(JSON.stringify({
  "delete (the old way)": fast(deleted),
  "metadata without managedFields": fast(without(parse(meta), ["managedFields"])),
  "run Job": fast(job),
  "Machine status": fast((machine as unknown as { status: unknown }).status),
  "other shard's configuration": fast(config) && fast(config.metadata),
}));
