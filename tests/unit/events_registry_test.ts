/**
 * Events as data (crds/events.ts): every Event NICO records has a registered reason, posted through the typed
 * poster (controllers/events.ts) with the registry's type, and docs/troubleshooting.md holds the table the registry
 * generates (`deno task crds` rewrites it).
 */
import assert from "node:assert/strict";
import { EVENTS_BEGIN, EVENTS_END, eventSpec, eventsSection, registeredEvents } from "../../crds/events.ts";
import { PHASES } from "../../crds/status.ts";
import { registeredReasons } from "../../crds/conditions/mod.ts";

import { ROOT, tsFiles } from "../source_kit.ts";

Deno.test("docs/troubleshooting.md holds the Event table the registry generates (run `deno task crds`)", async () => {
  const page = await Deno.readTextFile(new URL("docs/troubleshooting.md", ROOT));
  const section = page.slice(page.indexOf(EVENTS_BEGIN), page.indexOf(EVENTS_END) + EVENTS_END.length);
  assert.ok(section.startsWith(EVENTS_BEGIN) && section.endsWith(EVENTS_END), "the page has its generated section");
  assert.equal(section, eventsSection(), "the committed table differs from the registry: run `deno task crds`");
});

Deno.test("every reason says what it means and what to do; phases and Stalled reasons are all there", () => {
  const events = registeredEvents();
  assert.deepEqual(events.filter((e) => !e.spec.means || !e.spec.todo).map((e) => e.reason), []);
  assert.equal(new Set(events.map((e) => e.reason)).size, events.length, "one row per reason");
  for (const p of PHASES) assert.equal(eventSpec(`Phase${p}`)?.type, p === "Failed" ? "Warning" : "Normal", p);
  const stalled = registeredReasons().filter((r) => r.type === "Stalled" && r.spec.status === "True");
  assert.ok(stalled.length > 0);
  for (const r of stalled) assert.equal(eventSpec(r.reason)?.type, "Warning", r.reason);
  assert.equal(eventSpec("ReconcileError")?.type, "Warning");
  assert.equal(eventSpec("PhaseUnknown"), undefined);
});

Deno.test("no Event is posted outside the typed poster: no free reason or type at a call site", async () => {
  const outside: string[] = [];
  for (const dir of ["controllers", "cli", "webhooks", "core", "crds", "lib"]) {
    for (const rel of tsFiles(dir)) {
      if (rel === "controllers/events.ts" || rel === "lib/events.ts") continue;
      const text = await Deno.readTextFile(new URL(rel, ROOT));
      for (const m of text.matchAll(/\brecorder\s*\.\s*post\s*\(|\.post\([^)]*"(?:Normal|Warning)"/g)) {
        outside.push(`${rel}: ${m[0]}`);
      }
    }
  }
  assert.deepEqual(outside, [], "post through controllers/events.ts postEvent, with a reason of crds/events.ts");
});

Deno.test("an Event the docs' prose calls a Warning is a Warning in the registry", async () => {
  const page = await Deno.readTextFile(new URL("docs/troubleshooting.md", ROOT));
  const prose = page.slice(0, page.indexOf(EVENTS_BEGIN));
  const wrong = [...prose.matchAll(/`([A-Z][A-Za-z]+)` \(Warning\)/g)].map((m) => m[1]!)
    .filter((r) => eventSpec(r)?.type !== "Warning");
  assert.deepEqual(wrong, []);
});
