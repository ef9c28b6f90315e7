/**
 * The layout, checked: `lib/` (the ground floor) imports nothing of
 * clusters or of the layers above it, source files and functions stay
 * small (functions measured with Deno's own parser), the unit tests
 * (`tests/unit/`, `deno task test:unit`) need no control plane, and no
 * test sleeps for a fixed time.
 */
import assert from "node:assert/strict";

const ROOT = new URL("../../", import.meta.url);
const MAX_LINES = 350;

/** Files allowed over {@link MAX_LINES}, each with why. Keep it short. */
const TOO_BIG_BUT_ALLOWED: Record<string, string> = {};

/** Source files, as git knows them (generated YAML, golden files, lock files and docs are not source). */
async function sourceFiles(): Promise<string[]> {
  const out = await new Deno.Command("git", { args: ["ls-files"], cwd: ROOT, stdout: "piped" }).output();
  return new TextDecoder().decode(out.stdout).split("\n")
    .filter((f) => /\.(ts|go|sh|nix)$/.test(f))
    .filter((f) => !f.startsWith("tests/golden/"));
}

/** The relative imports of a TypeScript file, resolved against the repository root. */
function importsOf(path: string, text: string): string[] {
  const specs = [
    ...text.matchAll(/^\s*(?:import|export)\b[^"';]*?from\s+"([^"]+)"/gm),
    ...text.matchAll(/^import\s+"([^"]+)"/gm),
  ]
    .map((m) => m[1]!)
    .filter((s) => s.startsWith("."));
  return specs.map((s) => new URL(s, new URL(path, ROOT)).pathname.slice(ROOT.pathname.length));
}

Deno.test("lib/ imports nothing from crds/, core/, controllers/, webhooks/, cli/ or main.ts", async () => {
  const bad: string[] = [];
  for (const f of (await sourceFiles()).filter((f) => f.startsWith("lib/") && f.endsWith(".ts"))) {
    for (const target of importsOf(f, await Deno.readTextFile(new URL(f, ROOT)))) {
      if (/^(crds|core|controllers|webhooks|cli)\//.test(target) || target === "main.ts") bad.push(`${f} -> ${target}`);
    }
  }
  assert.deepEqual(bad, [], "lib/ is the ground floor: move the shared fact down, or the code up");
});

Deno.test("core/ is pure: it imports neither the controller shell, the webhook, nor the composition root", async () => {
  const bad: string[] = [];
  for (const f of (await sourceFiles()).filter((f) => f.startsWith("core/"))) {
    for (const target of importsOf(f, await Deno.readTextFile(new URL(f, ROOT)))) {
      if (/^(controllers|webhooks|cli|testing)\//.test(target)) bad.push(`${f} -> ${target}`);
    }
  }
  assert.deepEqual(bad, []);
});

Deno.test(`source files stay under ${MAX_LINES} lines (or are listed, with a reason)`, async () => {
  const big: string[] = [];
  for (const f of await sourceFiles()) {
    const lines = (await Deno.readTextFile(new URL(f, ROOT))).split("\n").length - 1;
    if (lines > MAX_LINES && !(f in TOO_BIG_BUT_ALLOWED)) big.push(`${f} (${lines} lines)`);
  }
  assert.deepEqual(big, [], "split these files along their seams");
  const stale = [];
  for (const f of Object.keys(TOO_BIG_BUT_ALLOWED)) {
    const text = await Deno.readTextFile(new URL(f, ROOT)).catch(() => "");
    if (text.split("\n").length - 1 <= MAX_LINES) stale.push(f);
  }
  assert.deepEqual(stale, [], "these are small now: remove them from TOO_BIG_BUT_ALLOWED");
});

Deno.test("tests/unit/ needs no control plane, Nix or git, tests/integration/ does, and no test lives elsewhere", async () => {
  // Also integration: tests that hold a thousand sockets or exhaust file descriptors in a child process.
  // Kits named *_api_kit.ts hold fixtures on a control plane; tests/nix_kit.ts runs nix-instantiate, git_kit.ts git.
  const needsCluster =
    /sharedControlPlane|startControlPlane|envtest|testing\/(world|scenario)\.ts|_api_kit\.ts|(nix|git)_kit\.ts|nix-instantiate|serveGitDaemon|ulimit -n/;
  const wrong: string[] = [];
  for (const f of (await sourceFiles()).filter((f) => /^tests\/.*_test\.ts$/.test(f))) {
    const heavy = needsCluster.test(await Deno.readTextFile(new URL(f, ROOT)));
    if (f.startsWith("tests/unit/") && heavy && f !== "tests/unit/layout_test.ts") {
      wrong.push(`${f} needs a control plane, Nix or git: move it to tests/integration/`);
    } else if (f.startsWith("tests/integration/") && !heavy) wrong.push(`${f} needs nothing: move it to tests/unit/`);
    else if (!/^tests\/(unit|integration)\/[^/]+$/.test(f)) {
      wrong.push(`${f}: put it in tests/unit/ or tests/integration/`);
    }
  }
  assert.deepEqual(wrong, []);
});

/**
 * A fixed sleep in a test: an awaited `sleep(ms)`, or an awaited promise of
 * `setTimeout` with a delay (a zero delay, one turn of the event loop, is
 * fine). Tests wait on conditions (`eventually`), on what NICO did
 * (`passAfter`, `settled`), on gates they open, or on fake timers.
 */
const FIXED_SLEEP =
  /await\s+(?:sleep\((?!\s*0\s*[,)])|new\s+Promise\(\s*\(?\w*\)?\s*=>\s*setTimeout\(\s*\w+\s*,(?!\s*0\s*\)))/g;

/** Where a fixed sleep cannot be avoided, how many, and why. Each such line also says so in a comment. */
const SLEEPS_ALLOWED: Record<string, { count: number; why: string }> = {
  "tests/integration/http_attack_test.ts": {
    count: 2,
    why: "pacing: an attack lasts a while, and admissions are tried at intervals during it",
  },
  "tests/unit/http_fuzz_test.ts": { count: 1, why: "pacing: a client that trickles its bytes is the case under test" },
  "tests/unit/webhook_abuse_test.ts": {
    count: 3,
    why: "the webhook server's connection-age rule and body reservations run on its own clock and show no state",
  },
};

Deno.test("no fixed sleeps in tests: they wait on conditions and events, not on time", async () => {
  const found: Record<string, number> = {};
  const tests = (await sourceFiles()).filter((f) => f.startsWith("tests/") && f.endsWith(".ts"));
  for (const f of tests.filter((f) => f !== "tests/unit/layout_test.ts")) {
    const n = (await Deno.readTextFile(new URL(f, ROOT))).match(FIXED_SLEEP)?.length ?? 0;
    if (n) found[f] = n;
  }
  const allowed = Object.fromEntries(Object.entries(SLEEPS_ALLOWED).map(([f, a]) => [f, a.count]));
  assert.deepEqual(
    found,
    allowed,
    "wait on a condition (testing/helpers.ts eventually), a pass, a gate or fake timers",
  );
});

Deno.test("the sleep pattern finds what it should and nothing else", () => {
  const hits = (text: string) => text.match(FIXED_SLEEP)?.length ?? 0;
  for (
    const bad of [
      "await sleep(200);",
      "await new Promise((r) => setTimeout(r, 1500));",
      "await new Promise(r => setTimeout(r, IDLE_MS))",
    ]
  ) {
    assert.equal(hits(bad), 1, bad);
  }
  for (
    const fine of [
      "await new Promise((r) => setTimeout(r, 0));",
      "sleep(5_000, give.signal).then(() => false)",
      "await turn();",
      "bash -c 'sleep 600'",
    ]
  ) {
    assert.equal(hits(fine), 0, fine);
  }
});

const MAX_FUNCTION_LINES = 80;

/**
 * Functions allowed over {@link MAX_FUNCTION_LINES} lines, by `file: name` (as {@link functionSpans} names
 * them), each with why. Keep it short: a function that gets short must leave the list.
 */
const TOO_LONG_BUT_ALLOWED: Record<string, string> = {};

/** One function in a source file: where it is, what it is called, and its length in lines. */
interface FunctionSpan {
  file: string;
  /** Its name; for a callback, what it is given to (`Deno.test "its name"`, `items.map callback`). */
  name: string;
  /** The line it opens on (1-based). */
  line: number;
  /** From its opening line to its closing brace, both counted. */
  lines: number;
}

type LintNode = Deno.lint.Node;

/** A readable name for a function node: its own, its variable's, its property's, or what it is passed to. */
function functionName(node: LintNode, text: (n: LintNode) => string): string {
  if ("id" in node && node.id && node.id.type === "Identifier") return node.id.name;
  const parent = (node as { parent?: LintNode }).parent;
  if (!parent) return "anonymous function";
  if (parent.type === "VariableDeclarator") return text(parent.id);
  if (parent.type === "MethodDefinition" || parent.type === "PropertyDefinition") return text(parent.key);
  const quoted = (n: LintNode | undefined) => n && n !== node && /^["'`]/.test(text(n)) ? text(n) : undefined;
  if (parent.type === "Property") {
    // Deno.test({ name: "…", fn: async () => {…} }): named as the test, like Deno.test("…", async () => {…}).
    const object = parent.parent;
    const named = object.type === "ObjectExpression" &&
      object.properties.find((p) => p.type === "Property" && text(p.key) === "name");
    const label = named && named.type === "Property" ? quoted(named.value) : undefined;
    if (!label) return text(parent.key);
    return object.parent.type === "CallExpression" ? `${text(object.parent.callee)} ${label}` : label;
  }
  if (parent.type === "CallExpression") {
    const label = quoted(parent.arguments[0]);
    return label ? `${text(parent.callee)} ${label}` : `${text(parent.callee)} callback`;
  }
  if (parent.type === "AssignmentExpression") return text(parent.left);
  return "anonymous function";
}

/** Every function in `source` (declarations, expressions, arrows, methods), measured with Deno's own parser. */
function functionSpans(file: string, source: string): FunctionSpan[] {
  const lineStarts = [0, ...[...source.matchAll(/\n/g)].map((m) => m.index + 1)];
  const lineOf = (offset: number) => lineStarts.findLastIndex((start) => start <= offset) + 1;
  const spans: FunctionSpan[] = [];
  const plugin: Deno.lint.Plugin = {
    name: "layout",
    rules: {
      "function-length": {
        create(ctx) {
          const text = (n: LintNode) => ctx.sourceCode.getText(n);
          const measure = (node: LintNode) => {
            const [start, end] = node.range;
            const line = lineOf(start);
            spans.push({ file, name: functionName(node, text), line, lines: lineOf(end - 1) - line + 1 });
          };
          return { FunctionDeclaration: measure, FunctionExpression: measure, ArrowFunctionExpression: measure };
        },
      },
    },
  };
  Deno.lint.runPlugin(plugin, file, source);
  return spans;
}

Deno.test(`functions stay under ${MAX_FUNCTION_LINES} lines (or are listed, with a reason)`, async () => {
  const long: FunctionSpan[] = [];
  for (const f of (await sourceFiles()).filter((f) => f.endsWith(".ts"))) {
    const spans = functionSpans(f, await Deno.readTextFile(new URL(f, ROOT)));
    long.push(...spans.filter((s) => s.lines > MAX_FUNCTION_LINES));
  }
  const key = (s: FunctionSpan) => `${s.file}: ${s.name}`;
  const unlisted = long.filter((s) => !(key(s) in TOO_LONG_BUT_ALLOWED))
    .map((s) => `${s.file}:${s.line} ${s.name} (${s.lines} lines)`);
  assert.deepEqual(unlisted, [], "split these along their seams (plain functions over a small context object)");
  const found = new Set(long.map(key));
  const stale = Object.keys(TOO_LONG_BUT_ALLOWED).filter((k) => !found.has(k));
  assert.deepEqual(stale, [], "these are short now (or gone): remove them from TOO_LONG_BUT_ALLOWED");
});

Deno.test("the function finder measures and names what it should", () => {
  const body = (n: number) => Array.from({ length: n - 2 }, (_, i) => `  const x${i} = ${i};`).join("\n");
  const source = [
    `export async function long(a: number): Promise<void> {\n${body(81)}\n}`,
    `const fits = (b: string) => {\n${body(80)}\n};`,
    `class K {\n  method() {\n  ${body(81)}\n  }\n}`,
    `Deno.test("a story", async () => {\n  [1].map((v) => {\n${body(79)}\n  });\n});`,
    `Deno.test({ name: "told as an object", fn() {\n${body(81)}\n} });`,
    "const obj = { step: function () {\n  return `}\n}`;\n} };",
  ].join("\n");
  const spans = functionSpans("x.ts", source).map((s) => `${s.name}:${s.lines}`);
  assert.deepEqual(spans, [
    "long:81",
    "fits:80",
    "method:81",
    'Deno.test "a story":81',
    "[1].map callback:79",
    'Deno.test "told as an object":81',
    "step:4",
  ]);
});
