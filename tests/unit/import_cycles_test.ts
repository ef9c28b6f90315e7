/**
 * No module of the product imports itself back, through any chain of
 * imports (type-only ones too: a circle of types is a circle of ideas, and
 * the one that was here, core/status/cluster.ts and planes.ts, had to go).
 */
import assert from "node:assert/strict";

const ROOT = new URL("../../", import.meta.url);
const FOLDERS = ["core", "crds", "lib", "controllers", "cli", "webhooks"];

/** The .ts files under `folder`, relative to the root. */
function filesUnder(folder: string): string[] {
  return [...Deno.readDirSync(new URL(`${folder}/`, ROOT))].flatMap((e) => {
    const path = `${folder}/${e.name}`;
    return e.isDirectory ? filesUnder(path) : e.name.endsWith(".ts") ? [path] : [];
  });
}

/** The relative imports and re-exports of `file`, resolved against the root. */
function importsOf(file: string): string[] {
  const text = Deno.readTextFileSync(new URL(file, ROOT));
  return [...text.matchAll(/^\s*(?:import|export)\b[^"';]*?from\s+"(\.[^"]+)"/gm)]
    .map((m) => new URL(m[1]!, new URL(file, ROOT)).pathname.slice(ROOT.pathname.length));
}

/** The circles of `graph`: each strongly connected set of more than one module (Tarjan's algorithm). */
export function circles(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const found: string[][] = [];
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) visit(w);
      if (stack.includes(w)) low.set(v, Math.min(low.get(v)!, low.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const circle = stack.splice(stack.indexOf(v));
    if (circle.length > 1) found.push(circle.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

Deno.test("the circle finder finds a circle through three modules, and none in a chain", () => {
  const g = (edges: [string, string][]) => {
    const m = new Map<string, string[]>();
    for (const [a, b] of edges) m.set(a, [...(m.get(a) ?? []), b]).set(b, m.get(b) ?? []);
    return m;
  };
  assert.deepEqual(circles(g([["a", "b"], ["b", "c"], ["c", "a"], ["c", "d"]])), [["a", "b", "c"]]);
  assert.deepEqual(circles(g([["a", "b"], ["b", "c"], ["a", "c"]])), []);
});

Deno.test("no import circle in core/, crds/, lib/, controllers/, cli/ or webhooks/", () => {
  const graph = new Map(FOLDERS.flatMap(filesUnder).map((f) => [f, importsOf(f)]));
  assert.deepEqual(circles(graph), [], "move what both need into a module of its own (as core/status/input.ts)");
});
