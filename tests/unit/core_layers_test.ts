/**
 * core/'s folders as a map: each folder imports only from the folders below it in {@link CORE_ORDER}, so there is
 * no loop between folders (etcd → status → rollout → etcd was one). A new folder needs a place here.
 */
import assert from "node:assert/strict";

import { ROOT, tsFiles } from "../source_kit.ts";

/** core/'s folders, lowest first: each may import from those before it, never from those after. */
const CORE_ORDER = ["contract", "machines", "versions", "render", "etcd", "nodes", "rollout", "status", "backup"];

/** The core/ folders `file` imports from (relative imports, type-only ones too), with the import. */
function coreImports(file: string, text: string): { folder: string; target: string }[] {
  return [...text.matchAll(/^\s*(?:import|export)\b[^"';]*?from\s+"(\.[^"]+)"/gm)]
    .map((m) => new URL(m[1]!, new URL(file, ROOT)).pathname.slice(ROOT.pathname.length))
    .filter((t) => t.startsWith("core/"))
    .map((target) => ({ folder: target.split("/")[1]!, target }));
}

/** The imports that go up or sideways in {@link CORE_ORDER}, or from or to a folder it does not place. */
function upward(files: string[], read = (f: string) => Deno.readTextFileSync(new URL(f, ROOT))): string[] {
  const bad: string[] = [];
  for (const f of files) {
    const from = f.split("/")[1]!;
    for (const { folder, target } of coreImports(f, read(f))) {
      if (folder === from) continue;
      const [a, b] = [CORE_ORDER.indexOf(from), CORE_ORDER.indexOf(folder)];
      if (a < 0 || b < 0 || b > a) bad.push(`${f} -> ${target}`);
    }
  }
  return bad;
}

Deno.test("every folder of core/ has a place in the order", () => {
  const folders = [...Deno.readDirSync(new URL("core/", ROOT))].filter((e) => e.isDirectory).map((e) => e.name);
  assert.deepEqual(folders.sort(), [...CORE_ORDER].sort());
});

Deno.test("core/'s folders import only downward: no loop between folders", () => {
  assert.deepEqual(upward(tsFiles("core")), [], "move the shared fact down, or the code up (CORE_ORDER)");
});

Deno.test("the order check finds an upward import, and lets a downward one through", () => {
  const text: Record<string, string> = {
    "core/etcd/up.ts": 'import { listNames } from "../status/conditions.ts";\n',
    "core/status/down.ts": 'import type { EtcdSight } from "../etcd/health.ts";\n',
  };
  assert.deepEqual(upward(Object.keys(text), (f) => text[f]!), ["core/etcd/up.ts -> core/status/conditions.ts"]);
});
