/**
 * The container image, checked without Docker: the build stage's context is
 * assembled exactly as `docker build` would (the Dockerfile's COPY lines,
 * `.dockerignore`, from the files git tracks), and `main.ts` is type-checked
 * and bundled there with `--frozen`, so a folder left out of the Dockerfile
 * fails here. The V8 flags come from one file, `deploy/v8-flags`, which the
 * Dockerfile's and the compile task's `deno compile --v8-flags`, the
 * benchmark, the Deployment and the chart all follow.
 */
import assert from "node:assert/strict";
import { deploymentV8Flags } from "../../bench/scale/options.ts";
import denoJson from "../../deno.json" with { type: "json" };

const ROOT = new URL("../../", import.meta.url).pathname;
const V8_FLAGS_FILE = "deploy/v8-flags";

/** One `COPY` of the build stage: sources (context paths) and where they go. */
interface Copy {
  sources: string[];
  dest: string;
}

/** The build stage of the Dockerfile: its COPY lines (not `--from`) and its RUN lines. */
export function buildStage(dockerfile: string): { copies: Copy[]; runs: string[] } {
  const lines = dockerfile.replace(/\\\n/g, " ").split("\n").map((l) => l.trim());
  const from = lines.findIndex((l) => /^FROM\s/i.test(l));
  const next = lines.findIndex((l, i) => i > from && /^FROM\s/i.test(l));
  const stage = lines.slice(from, next < 0 ? undefined : next);
  const copies = stage.filter((l) => /^COPY\s/i.test(l) && !/--from=/.test(l)).map((l) => {
    const words = l.split(/\s+/).slice(1).filter((w) => !w.startsWith("--"));
    return { sources: words.slice(0, -1), dest: words.at(-1)! };
  });
  return { copies, runs: stage.filter((l) => /^RUN\s/i.test(l)) };
}

/** A `.dockerignore` as a predicate on context paths: the last matching pattern wins, `!` re-includes. */
export function dockerignore(text: string): (path: string) => boolean {
  const rules = text.split("\n").map((l) => l.trim()).filter((l) => l && !l.startsWith("#")).map((l) => {
    const include = l.startsWith("!");
    const pattern = l.replace(/^!/, "").replace(/^\/+|\/+$/g, "");
    const body = pattern.split(/(\*\*\/?|\*|\?)/).map((part) =>
      part === "**/"
        ? "(?:.*/)?"
        : part === "**"
        ? ".*"
        : part === "*"
        ? "[^/]*"
        : part === "?"
        ? "[^/]"
        : part.replace(/[.+^${}()|[\]\\]/g, "\\$&")
    ).join("");
    return { include, re: new RegExp(`^${body}(?:/.*)?$`) };
  });
  return (path) => {
    let ignored = false;
    for (const r of rules) if (r.re.test(path)) ignored = !r.include;
    return ignored;
  };
}

/** The files of a checkout: tracked, or new and not ignored by git (a context is what the checkout holds). */
async function checkoutFiles(): Promise<string[]> {
  const args = ["ls-files", "--cached", "--others", "--exclude-standard"];
  const out = await new Deno.Command("git", { args, cwd: ROOT, stdout: "piped" }).output();
  return new TextDecoder().decode(out.stdout).split("\n").filter(Boolean);
}

/** Copies into `dir` what the build stage's COPY lines take from the context; answers the paths written. */
async function assembleContext(dir: string, copies: Copy[], ignored: (p: string) => boolean): Promise<string[]> {
  const files = (await checkoutFiles()).filter((f) => !ignored(f));
  const written: string[] = [];
  for (const { sources, dest } of copies) {
    for (const source of sources) {
      const src = source.replace(/^\.\//, "").replace(/\/+$/, "");
      const matched = files.filter((f) => f === src || f.startsWith(`${src}/`));
      assert.ok(matched.length, `COPY ${source}: nothing in the context (missing, or left out by .dockerignore)`);
      for (const f of matched) {
        const rel = f === src ? f.slice(f.lastIndexOf("/") + 1) : f.slice(src.length + 1);
        const target = dest.endsWith("/") || sources.length > 1 || f !== src
          ? `${dest.replace(/\/+$/, "")}/${rel}`
          : dest;
        const path = `${dir}/${target.replace(/^\.\//, "")}`;
        await Deno.mkdir(path.slice(0, path.lastIndexOf("/")), { recursive: true });
        await Deno.copyFile(`${ROOT}${f}`, path);
        written.push(target.replace(/^\.\//, ""));
      }
    }
  }
  return written;
}

function tmpDir(): string {
  return Deno.env.get("TMPDIR") ?? "/tmp";
}

async function deno(args: string[], cwd: string): Promise<{ ok: boolean; output: string }> {
  const out = await new Deno.Command(Deno.execPath(), { args, cwd, stdout: "piped", stderr: "piped" }).output();
  const dec = new TextDecoder();
  return { ok: out.success, output: dec.decode(out.stdout) + dec.decode(out.stderr) };
}

Deno.test(".dockerignore patterns: folders, globs, ** and ! as docker reads them", () => {
  const ignored = dockerignore("# c\n.git\ntests\n**/*_test.ts\ndocs/*.md\n!docs/keep.md\n/dist/\n");
  const cases: [string, boolean][] = [
    [".git/config", true],
    ["tests/unit/a_test.ts", true],
    ["lib/kube/client_test.ts", true],
    ["a_test.ts", true],
    ["lib/kube/client.ts", false],
    ["docs/ops.md", true],
    ["docs/keep.md", false],
    ["docs/sub/ops.md", false],
    ["dist/nico", true],
    ["distro.ts", false],
  ];
  assert.deepEqual(cases.map(([p]) => [p, ignored(p)]), cases);
});

Deno.test("the image's build context has what main.ts imports: it type-checks and bundles there with --frozen", async () => {
  const { copies, runs } = buildStage(await Deno.readTextFile(`${ROOT}Dockerfile`));
  const ignored = dockerignore(await Deno.readTextFile(`${ROOT}.dockerignore`).catch(() => ""));
  // A fixed folder per checkout: Deno's type-check cache knows its files by path, so an unchanged context checks fast.
  const key = (await crypto.subtle.digest("SHA-256", new TextEncoder().encode(ROOT))).slice(0, 6);
  const dir = `${tmpDir()}/nico-image-context-${[...new Uint8Array(key)].map((b) => b.toString(16)).join("")}`;
  await Deno.remove(dir, { recursive: true }).catch(() => {});
  await Deno.mkdir(dir, { recursive: true });
  try {
    const files = await assembleContext(dir, copies, ignored);
    assert.deepEqual(files.filter((f) => /^(testing|tests)\//.test(f)), [], "the image needs nothing from testing/");
    const compile = runs.find((r) => /deno compile/.test(r));
    assert.ok(compile, "the build stage runs deno compile");
    assert.match(compile, /--frozen/);
    assert.match(compile, /\smain\.ts\s*$/);
    const check = await deno(["check", "--frozen", "main.ts"], dir);
    assert.ok(check.ok, `deno check main.ts in the image's context:\n${check.output}`);
    const bundle = await deno(["bundle", "--frozen", "--platform", "deno", "--output", "nico.js", "main.ts"], dir);
    assert.ok(bundle.ok, `deno bundle main.ts in the image's context:\n${bundle.output}`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("one set of V8 flags: deploy/v8-flags, built into the binary and followed by the manifests and the bench", async () => {
  const flags = (await Deno.readTextFile(`${ROOT}${V8_FLAGS_FILE}`)).trim();
  // Flags with a number, or switches (--lite-mode): one line, comma-separated, nothing a shell would split.
  assert.match(flags, /^--max-old-space-size=\d+(,--[a-z-]+(=\d+)?)*$/);
  const { copies, runs } = buildStage(await Deno.readTextFile(`${ROOT}Dockerfile`));
  assert.ok(copies.some((c) => c.sources.includes(V8_FLAGS_FILE)), `the Dockerfile copies ${V8_FLAGS_FILE}`);
  const fromFile = `--v8-flags="$(cat ${V8_FLAGS_FILE})"`;
  assert.ok(runs.some((r) => r.includes("deno compile") && r.includes(fromFile)), `deno compile ${fromFile}`);
  const task = (denoJson.tasks as Record<string, string>).compile!;
  assert.match(task, /^deno compile /);
  assert.ok(task.includes(`--v8-flags=$(cat ${V8_FLAGS_FILE})`), `deno task compile reads ${V8_FLAGS_FILE}: ${task}`);
  assert.equal(deploymentV8Flags(), flags, "the benchmark runs NICO with these flags");
  for (const manifest of ["deploy/base/deployment.yaml", "deploy/helm/nico/templates/deployment.yaml"]) {
    const text = await Deno.readTextFile(`${ROOT}${manifest}`);
    const values = [...text.matchAll(/- name: DENO_V8_FLAGS\n\s+value: (.+)\n/g)].map((m) => m[1]!.trim());
    assert.deepEqual(values, [flags], `${manifest} sets DENO_V8_FLAGS as ${V8_FLAGS_FILE} says`);
  }
});
