/**
 * The docs agree with the condition registry: docs/troubleshooting.md holds
 * the tables generated from it (`deno task crds` rewrites them), so every
 * registered reason is documented there and nothing else is; and every
 * `Type=Status Reason` the docs mention of NICO's conditions is registered.
 */
import assert from "node:assert/strict";
import { BEGIN, conditionsSection, END, TROUBLESHOOTING_PATH } from "../../crds/conditions/docs.ts";
import { reasonSpec, registeredReasons, typeSpec } from "../../crds/conditions/mod.ts";

const ROOT = new URL("../../", import.meta.url);

Deno.test("docs/troubleshooting.md holds the condition tables the registry generates (run `deno task crds`)", async () => {
  const page = await Deno.readTextFile(TROUBLESHOOTING_PATH);
  const section = page.slice(page.indexOf(BEGIN), page.indexOf(END) + END.length);
  assert.ok(section.startsWith(BEGIN) && section.endsWith(END), "the page has its generated section");
  assert.equal(section, conditionsSection(), "the committed tables differ from the registry: run `deno task crds`");
});

Deno.test("every registered reason has a row of its own, saying what it means and what to do", () => {
  const section = conditionsSection();
  const missing = registeredReasons().filter(({ type, reason, spec }) =>
    !section.split("\n").some((line) =>
      line.startsWith(`| ${type} `) && line.includes(` \`${reason}\` `) && line.includes(spec.means) &&
      line.includes(spec.todo)
    ) || !spec.means || !spec.todo
  );
  assert.deepEqual(missing.map((r) => `${r.type} ${r.reason}`), []);
});

Deno.test("every Type=Status (Reason) of NICO's conditions that a doc mentions is one NICO writes", async () => {
  const docs = ["README.md", ...[...Deno.readDirSync(new URL("docs/", ROOT))].map((e) => `docs/${e.name}`)]
    .filter((f) => f.endsWith(".md"));
  const wrong: string[] = [];
  for (const f of docs) {
    const text = await Deno.readTextFile(new URL(f, ROOT));
    for (const m of text.matchAll(/\b([A-Z][A-Za-z]+)=(True|False|Unknown)\b(?: ([A-Z][A-Za-z]+)\b)?/g)) {
      const [, type, status, reason] = m as unknown as [string, string, string, string | undefined];
      if (!typeSpec(type)) continue; // NIO's (Applied, Discoverable, …)
      const reasons = registeredReasons().filter((r) => r.type === type && r.spec.status === status);
      if (!reasons.length || (reason && !reasonSpec(type, status, reason))) wrong.push(`${f}: ${m[0]}`);
    }
  }
  assert.deepEqual(wrong, []);
});
