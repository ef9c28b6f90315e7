/**
 * The layout, checked: `lib/` (the ground floor) imports nothing of
 * clusters or of the layers above it, source files stay small, the unit
 * tests (`tests/unit/`, `deno task test:unit`) need no control plane, and
 * no test sleeps for a fixed time.
 */
import assert from "node:assert/strict";

const ROOT = new URL("../../", import.meta.url);
const MAX_LINES = 350;

/** Files allowed over {@link MAX_LINES}, each with why. Keep it short. */
const TOO_BIG_BUT_ALLOWED: Record<string, string> = {
  "tests/integration/flake_test.ts":
    "one fixture (a Nix evaluation sandbox) shared by all cases; the security branch edits nearby",
  "tests/integration/git_test.ts": "lib/git's tests, being rewritten on the security branch; split after it lands",
  "tests/integration/sim_nio_test.ts": "one test per fact of the NIO contract, sharing one world() fixture",
  "tests/integration/webhook_api_test.ts":
    "one webhook server and control plane shared by its cases; the security branch edits it",
  "bench/webhook.ts": "the webhook benchmark, figures only",
};

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
  const needsCluster = /sharedControlPlane|startControlPlane|envtest|nix-instantiate|serveGitDaemon/;
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
