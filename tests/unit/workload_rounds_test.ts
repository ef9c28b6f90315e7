/** The soft bound on polled rounds (controllers/cluster/workload/rounds.ts): a turn each, and never a stall. */
import assert from "node:assert/strict";
import { RoundGate } from "../../controllers/cluster/workload/rounds.ts";

function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

Deno.test("at most `limit` rounds run at once; the next starts when one ends", async () => {
  const gate = new RoundGate(2, 60_000);
  const [a, b] = [deferred(), deferred()];
  const started: string[] = [];
  const round = (name: string, until: Promise<void>) =>
    gate.run(async () => {
      started.push(name);
      await until;
    });
  const ra = round("a", a.promise);
  const rb = round("b", b.promise);
  const rc = round("c", Promise.resolve());
  await Promise.resolve();
  assert.deepEqual(started, ["a", "b"], "c waits for a turn");
  assert.equal(gate.running, 2);
  a.resolve();
  await ra;
  await rc;
  assert.deepEqual(started, ["a", "b", "c"]);
  b.resolve();
  await rb;
  assert.equal(gate.running, 0);
});

Deno.test("a round that waited maxWaitMs goes anyway; a failing round frees its turn", async () => {
  const gate = new RoundGate(1, 20);
  const hung = deferred();
  const first = gate.run(() => hung.promise);
  assert.equal(await gate.run(() => Promise.resolve("through")), "through", "let through after its wait");
  await assert.rejects(gate.run(() => Promise.reject(new Error("boom"))), /boom/);
  hung.resolve();
  await first;
  assert.equal(gate.running, 0);
});
