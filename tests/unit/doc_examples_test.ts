/**
 * The `@example` blocks of the pure core and the CRD module stay true: each
 * block is run, and every line of the form `expression; // value` is checked
 * (the value is read as a JavaScript literal; words after it, as in
 * `// true: the order does not matter`, are commentary; `"..."` stands for
 * any value). `deno task check` only type-checks these blocks.
 */
import assert from "node:assert/strict";
import { isDeepStrictEqual } from "node:util";

const ROOT = new URL("../../", import.meta.url);
const FOLDERS = ["core", "crds"];

/** The .ts files under `folder` (relative to the root), in every subfolder, sorted. */
export async function tsFilesUnder(folder: string): Promise<string[]> {
  const out: string[] = [];
  for await (const e of Deno.readDir(new URL(`${folder}/`, ROOT))) {
    const path = `${folder}/${e.name}`;
    if (e.isDirectory) out.push(...await tsFilesUnder(path));
    else if (e.isFile && e.name.endsWith(".ts")) out.push(path);
  }
  return out.sort();
}

interface Block {
  file: string;
  line: number;
  code: string;
}

/** The ```ts blocks inside JSDoc comments of `text`, with the line each starts on. */
export function docBlocks(file: string, text: string): Block[] {
  const blocks: Block[] = [];
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    if (!/^\s*\* ```ts\s*$/.test(lines[i]!)) continue;
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length && !/^\s*\* ```\s*$/.test(lines[j]!); j++) body.push(lines[j]!.replace(/^\s*\* ?/, ""));
    blocks.push({ file, line: i + 2, code: body.join("\n") });
    i = j;
  }
  return blocks;
}

/** The literal at the start of `comment` (the longest prefix that parses), or undefined when none does. */
export function expectedOf(comment: string): { text: string } | undefined {
  const cuts = [comment.length, ...[...comment.matchAll(/:\s|\s—|\s\(/g)].map((m) => m.index!)]
    .sort((a, b) => b - a);
  for (const cut of cuts) {
    const text = comment.slice(0, cut).trim();
    if (!text) continue;
    try {
      new Function(`return (${text});`);
      return { text };
    } catch { /* not a literal yet */ }
  }
  return undefined;
}

/** `actual` matches `expected`, where the string "..." matches anything. */
export function matches(actual: unknown, expected: unknown): boolean {
  if (expected === "...") return true;
  if (Array.isArray(expected)) {
    return Array.isArray(actual) && actual.length === expected.length &&
      expected.every((e, i) => matches(actual[i], e));
  }
  if (expected && typeof expected === "object") {
    if (!actual || typeof actual !== "object") return false;
    const keys = Object.keys(expected);
    return isDeepStrictEqual(Object.keys(actual).sort(), keys.sort()) &&
      keys.every((k) => matches((actual as Record<string, unknown>)[k], (expected as Record<string, unknown>)[k]));
  }
  return isDeepStrictEqual(actual, expected);
}

/**
 * The block as a module: relative imports made absolute, the module's own
 * exports it uses imported (as `deno check --doc` does), and each top-level
 * `expr; // value` line a check.
 */
function instrument(b: Block, exports: string[]): { source: string; checks: number } {
  const dir = new URL(`${b.file.slice(0, b.file.lastIndexOf("/") + 1)}`, ROOT);
  const declared = new Set(
    [...b.code.matchAll(/\b(?:const|let|function|class)\s+(\w+)|import\s*\{([^}]*)\}/g)]
      .flatMap((m) => m[1] ? [m[1]] : m[2]!.split(",").map((n) => n.trim().split(/\s+as\s+/).at(-1)!)),
  );
  const used = exports.filter((n) => !declared.has(n) && new RegExp(`\\b${n}\\b`).test(b.code));
  const preamble = used.length ? `import { ${used.join(", ")} } from "${new URL(b.file, ROOT).href}";\n` : "";
  let checks = 0;
  const lines = b.code.split("\n").map((line, i) => {
    const fixed = line.replace(
      /(from\s+["'])(\.{1,2}\/[^"']+)(["'])/,
      (_m, a, p, z) => `${a}${new URL(p, dir).href}${z}`,
    );
    const m = /^(?!(?:const|let|import|export|await\s+using)\b)([^\s].*?[^,({\s]);?\s*\/\/\s*(.+)$/.exec(fixed);
    const expected = m ? expectedOf(m[2]!) : undefined;
    if (!m || !expected) return fixed;
    checks++;
    const where = JSON.stringify(`${b.file}:${b.line + i}`);
    return `__check(${m[1]}, (${expected.text}), ${where}, ${JSON.stringify(m[1]!.trim())});`;
  });
  return { source: preamble + lines.join("\n"), checks };
}

Deno.test("the expectation reader takes the literal and leaves the commentary", () => {
  assert.deepEqual(expectedOf(`true: key order does not matter`), { text: "true" });
  assert.deepEqual(expectedOf(`{ host: "127.0.0.1", port: 6443 }`), { text: `{ host: "127.0.0.1", port: 6443 }` });
  assert.deepEqual(expectedOf(`"2026-01-01T00:00:00Z": the status did not flip`), { text: `"2026-01-01T00:00:00Z"` });
  assert.equal(expectedOf("the cluster waits"), undefined);
  assert.ok(matches({ error: "bad host" }, { error: "..." }));
  assert.ok(!matches({ error: "bad host", extra: 1 }, { error: "..." }));
  assert.ok(!matches(["a"], ["a", "b"]));
});

Deno.test("every @example of core/ and crds/ runs, and says what it returns", async () => {
  const blocks: Block[] = [];
  for (const folder of FOLDERS) {
    for (const file of await tsFilesUnder(folder)) {
      blocks.push(...docBlocks(file, await Deno.readTextFile(new URL(file, ROOT))));
    }
  }
  const failures: string[] = [];
  let checks = 0;
  const dir = await Deno.makeTempDir({ prefix: "nico-doc-examples-" });
  const g = globalThis as { __check?: unknown };
  g.__check = (actual: unknown, expected: unknown, where: string, expr: string) => {
    if (!matches(actual, expected)) {
      failures.push(`${where}: ${expr} is ${JSON.stringify(actual)}, the example says ${JSON.stringify(expected)}`);
    }
  };
  try {
    for (const [i, b] of blocks.entries()) {
      const exports = Object.keys(await import(new URL(b.file, ROOT).href));
      const { source, checks: n } = instrument(b, exports);
      checks += n;
      const path = `${dir}/example-${i}.ts`;
      await Deno.writeTextFile(path, source + "\nexport {};\n");
      try {
        await import(`file://${path}`);
      } catch (err) {
        failures.push(`${b.file}:${b.line}: the example throws: ${(err as Error).message}`);
      }
    }
  } finally {
    delete g.__check;
    await Deno.remove(dir, { recursive: true });
  }
  assert.deepEqual(failures, []);
  assert.ok(blocks.length >= 50, `only ${blocks.length} examples found`);
  assert.ok(checks >= 40, `only ${checks} expectations checked`);
});
