/**
 * The test world (testing/world.ts) on the real API server: `await using`
 * stops what it started however the test ends, what the test deferred first
 * (while NICO and NIO still run), and a restart replaces NICO.
 */
import assert from "node:assert/strict";
import { createMachines, machinesDiscovered } from "../../testing/nico.ts";
import { world } from "../../testing/world.ts";

Deno.test("a world is stopped however the test ends: what it deferred first, then NICO and the simulated NIO", async () => {
  const order: string[] = [];
  let escaped: Awaited<ReturnType<typeof world>> | undefined;
  await assert.rejects(async () => {
    await using w = await world("world");
    escaped = w;
    w.defer(() =>
      order.push(`deferred while NICO ${w.nico ? "runs" : "is gone"} and NIO ${w.nio ? "runs" : "is gone"}`)
    );
    await createMachines(w.client, w.ns, ["m-1"]);
    await machinesDiscovered(w.client, w.ns, ["m-1"]); // the simulator works
    throw new Error("the test failed here");
  }, /the test failed here/);
  assert.deepEqual(order, ["deferred while NICO runs and NIO runs"]);
  assert.throws(() => escaped!.nico, /has no NICO running/);
  assert.throws(() => escaped!.nio, /has no simulated NIO running/);
  assert.throws(() => escaped!.workloads, /has no workload clusters running/);
});

Deno.test("startNico replaces the running NICO; nico: false starts none", async () => {
  await using w = await world("world-restart", { nico: false });
  assert.throws(() => w.nico, /has no NICO running/);
  const first = await w.startNico();
  assert.equal(w.nico, first);
  const second = await w.startNico();
  assert.notEqual(second, first);
  assert.equal(w.nico, second);
  await w.stopNico();
  assert.throws(() => w.nico, /has no NICO running/);
});
