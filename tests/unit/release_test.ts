/** core/machines/release.ts: when a Machine whose configuration is gone may be released, on NIO v1 and the older NIO. */
import assert from "node:assert/strict";
import type { DecommissionJob } from "../../core/contract/nio.ts";
import { releaseDecision, type ReleaseInput } from "../../core/machines/release.ts";

const T0 = new Date("2026-01-01T00:00:00Z");
const at = (s: number) => new Date(T0.getTime() + s * 1000);
const job = (o: { config?: string; done?: boolean; deleting?: boolean } = {}): DecommissionJob => ({
  metadata: {
    name: "c.w-3-onremove",
    labels: { "nio.homystack.com/machine": "w-3", "nio.homystack.com/config": o.config ?? "c.w-3" },
    ...(o.deleting ? { deletionTimestamp: at(0).toISOString() } : {}),
  },
  status: o.done ? { succeeded: 1 } : {},
});
const input = (o: Partial<ReleaseInput>): ReleaseInput => ({
  machine: "w-3",
  nio: "v1",
  decommissions: [],
  configExists: () => false,
  freeSince: at(0),
  now: at(10),
  ...o,
});

const cases: { name: string; input: ReleaseInput; release: boolean; leaked?: boolean; jobSeen?: boolean }[] = [
  { name: "no NixJob, settled: released", input: input({}), release: true },
  { name: "no NixJob, within the settle: waits", input: input({ now: at(3) }), release: false },
  { name: "the older NIO: released at once", input: input({ nio: "older", now: at(0) }), release: true },
  {
    name: "NIO applies the removal flake: waits, and the settle restarts",
    input: input({ decommissions: [job()], configExists: () => true }),
    release: false,
    jobSeen: true,
  },
  {
    name: "a leftover NixJob still running: waits",
    input: input({ decommissions: [job()] }),
    release: false,
    jobSeen: true,
  },
  {
    name: "a leftover NixJob finished: removed, not released yet",
    input: input({ decommissions: [job({ done: true })] }),
    release: false,
    leaked: true,
    jobSeen: true,
  },
  {
    name: "a leftover being deleted: waits",
    input: input({ decommissions: [job({ done: true, deleting: true })] }),
    release: false,
    jobSeen: true,
  },
  {
    name: "another Machine's NixJob does not hold this one",
    input: input({ machine: "w-4", decommissions: [job()] }),
    release: true,
  },
];

Deno.test("releaseDecision: NixJobs hold a Machine, leftovers are removed, the settle restarts after them", async (t) => {
  for (const c of cases) {
    await t.step(c.name, () => {
      const d = releaseDecision(c.input);
      assert.equal(d.release, c.release);
      if (d.release) return;
      assert.equal(d.removeLeaked !== undefined, c.leaked === true, "removeLeaked");
      assert.equal(d.jobSeen === true, c.jobSeen === true, "jobSeen");
      assert.ok(d.waiting.length > 0);
    });
  }
});
