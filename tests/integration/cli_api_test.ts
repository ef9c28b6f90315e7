/**
 * `nico get`, `describe`, `plan` and `kubeconfig` on a real API server with
 * the simulated NIO: one cluster Ready, one mid-rollout (a worker that never
 * finishes applying) and one halted (a worker whose apply fails). Output is
 * compared with golden files (ages normalised); docs/cli.md quotes them.
 */
import assert from "node:assert/strict";
import { parse } from "yaml";
import type { KubernetesCluster } from "../../crds/kubernetescluster.ts";
import type { KubeClient, KubeObject } from "../../lib/kube/client.ts";
import { SECRETS } from "../../lib/kube/resources.ts";
import { KUBERNETES_CLUSTERS } from "../../crds/kubernetescluster.ts";
import { NIXOS_CONFIGURATIONS } from "../../core/contract/nio.ts";
import { FAIL_APPLY_ANNOTATION, NEVER_FINISH_ANNOTATION, type SimNio } from "../../testing/sim-nio.ts";
import { binDir, type ControlPlane } from "../../testing/envtest/controlplane.ts";
import { eventually, ownControlPlane } from "../../testing/helpers.ts";
import { createMachines, machinesDiscovered, type RunningNico, settled } from "../../testing/nico.ts";
import { normalise, runNicoCli } from "../../testing/cli.ts";
import { world } from "../../testing/world.ts";
import { configName } from "../../core/contract/names.ts";
import { assertGolden } from "../golden.ts";

/** `nico get -A` lists every namespace, and its golden output must not show other tests' clusters: a control plane of its own. */
const env = ownControlPlane({});
const V1 = "https://git.example.test/v1.git";
const V2 = "https://git.example.test/v2.git";

const cond = (c: KubernetesCluster | undefined, type: string) => c?.status?.conditions?.find((x) => x.type === type);

async function cluster(client: KubeClient, ns: string, name: string, cp: string[], workers: string[]) {
  await client.create(KUBERNETES_CLUSTERS, {
    metadata: { name, namespace: ns },
    spec: { gitRepo: V1, controlPlane: { machines: cp }, dataPlane: { machines: workers } },
  });
}

async function ready(client: KubeClient, ns: string, name: string) {
  await eventually(`${name} Ready`, async () => {
    const c = await client.get<KubernetesCluster>(KUBERNETES_CLUSTERS, name, ns);
    return c?.status?.phase === "Ready" && c.status.rollout?.upToDate === c.status.rollout?.total;
  }, 60_000);
}

/** Three clusters in one namespace: `ready`, `rolling` (stuck mid-rollout) and `halted`. */
async function setUp(client: KubeClient, nico: RunningNico, nio: SimNio, ns: string) {
  await createMachines(client, ns, ["cp-a", "w-a", "cp-r", "w-r1", "w-r2", "w-r3", "cp-h", "w-h1", "w-h2"]);
  await machinesDiscovered(client, ns, ["cp-a", "w-a", "cp-r", "w-r1", "w-r2", "w-r3", "cp-h", "w-h1", "w-h2"]);
  await cluster(client, ns, "ready", ["cp-a"], ["w-a"]);
  await cluster(client, ns, "rolling", ["cp-r"], ["w-r1", "w-r2", "w-r3"]);
  await cluster(client, ns, "halted", ["cp-h"], ["w-h1", "w-h2"]);
  for (const name of ["ready", "rolling", "halted"]) await ready(client, ns, name);
  const annotate = (cfg: string, key: string) =>
    client.mergePatch(NIXOS_CONFIGURATIONS, cfg, ns, { metadata: { annotations: { [key]: "true" } } });
  await annotate(configName("halted", "w-h1"), FAIL_APPLY_ANNOTATION);
  const changed = Date.now();
  for (const name of ["rolling", "halted"]) {
    await client.mergePatch(KUBERNETES_CLUSTERS, name, ns, { spec: { gitRepo: V2 } });
  }
  // w-r1's host hangs in the middle of the new commit's run (flagged before it, a scheduled tick of the old spec
  // could hang instead and hold the new run back).
  await eventually(
    "w-r1's run of the new commit started",
    () =>
      nio.history.some((e) =>
        e.kind === "apply-started" && e.name === configName("rolling", "w-r1") && e.at >= changed
      ),
    30_000,
  );
  await annotate(configName("rolling", "w-r1"), NEVER_FINISH_ANNOTATION);
  await eventually("rolling: w-r1 updating, the rest pending", async () => {
    const c = await client.get<KubernetesCluster>(KUBERNETES_CLUSTERS, "rolling", ns);
    const r = c?.status?.rollout;
    return r?.updating?.join() === "w-r1" && r.pending?.join() === "w-r2,w-r3,cp-r" &&
      cond(c, "Ready")?.reason === "WaitingForWorkers" &&
      /NIO is running the switch/.test(cond(c, "Ready")?.message ?? "");
  }, 30_000);
  await eventually("halted: RolloutStalled at w-h1", async () => {
    const c = await client.get<KubernetesCluster>(KUBERNETES_CLUSTERS, "halted", ns);
    return cond(c, "RollingOut")?.reason === "RolloutStalled" && c?.status?.phase === "Failed" &&
      c.status.rollout?.pending?.join() === "w-h2,cp-h";
  }, 30_000);
  // NICO has done all it would for each cluster: the output cannot change under the commands.
  for (const name of ["ready", "rolling", "halted"]) await settled(client, nico, ns, name);
}

/**
 * Runs `nico args` until no run is between its Job and its Pod. The hung node's schedule (every minute) starts a
 * run beside the hung one, as NIO v1's CronJob does (it does not count the one-off run), and for the moment before
 * that run's Pod is up NICO says the run "is starting"; that moment passes within a second or two.
 */
function steadyCli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return eventually(
    `nico ${args.join(" ")}: no run between its Job and its Pod`,
    async () => {
      const o = await runNicoCli(args);
      return o.code !== 0 || !/run \S+ is starting/.test(o.stdout) ? o : undefined;
    },
    30_000,
    500,
  );
}

/** What the commands print, against golden files (with what moves under a loaded machine normalised). */
async function goldenOutputs(ns: string, kc: string): Promise<void> {
  const stable = { [ns]: "cli-xxxxxxxx" };
  const cases: [string, string[]][] = [
    ["cli-get.txt", ["get", kc, "-n", ns]],
    ["cli-get-all-namespaces.txt", ["get", kc, "-A"]],
    ["cli-describe-ready.txt", ["describe", "ready", kc, "-n", ns]],
    ["cli-describe-rolling.txt", ["describe", "rolling", kc, "-n", ns]],
    ["cli-describe-halted.txt", ["describe", "halted", kc, "--namespace", ns]],
    ["cli-describe-rolling-conditions.txt", ["describe", "rolling", kc, "-n", ns, "--show-conditions", "all"]],
    ["cli-plan-ready.txt", ["plan", "ready", kc, "-n", ns]],
    ["cli-plan-rolling.txt", ["plan", "rolling", kc, "-n", ns]],
    ["cli-plan-halted.txt", ["plan", "halted", kc, "-n", ns]],
  ];
  for (const [golden, args] of cases) {
    const out = await steadyCli(args);
    assert.equal(out.code, 0, `nico ${args.join(" ")}: ${out.stderr}`);
    assert.ok(!out.stdout.includes("\x1b["), "no colour when piped");
    // A failing run's attempt number moves on while NIO retries it; which run a node is in depends on whether a
    // scheduled tick came between: the new commit's run, or the tick's.
    const text = normalise(out.stdout, stable).replace(/attempt \d+/g, "attempt <n>");
    // Where the halted node's retries stand depends on timing too (on a loaded machine): NIO retrying, Kubernetes
    // having given up, or the next scheduled run under way.
    const retry =
      /; (NIO retries it \(up to 7 attempts\)|Kubernetes gave up after \d+ attempt\(s\)|NIO is running it again \(run [^)]+\))/g;
    await assertGolden(
      golden,
      text.replace(/run [a-z0-9.-]+-day2-[a-z0-9-]+/g, "run <run>").replace(retry, "; <retries>"),
    );
  }
}

/** The facts the golden files must show, checked directly too. */
async function factsShown(ns: string, kc: string): Promise<void> {
  const rolling = (await steadyCli(["describe", "rolling", kc, "-n", ns])).stdout;
  // NIO v1 says Ready before it ran anything; NICO, reading the run Jobs, says Applying.
  assert.match(rolling, /Machine\/w-r1 +Applying +Ready +- +updating +NIO is running the switch/);
  assert.match(rolling, /Machine\/w-r2 .* pending #1/);
  const halted = (await steadyCli(["describe", "halted", kc, "-n", ns])).stdout;
  assert.match(halted, /Machine\/w-h1 +Failed +Ready +- +failed +the switch failed on attempt \d+ of run /);
  assert.match(halted, /Machine\/w-h2 .* held #1/);
  const plan = (await runNicoCli(["plan", "rolling", kc, "-n", ns])).stdout;
  assert.match(plan, /1 +update +w-r2 +w-r1 +at most 1 worker\(s\) unavailable at once/);
  assert.match(plan, /3 +update +cp-r +w-r3 +control plane waits for the workers \(WorkersFirst\)/);
}

/** Errors a user can make: a missing cluster, a missing argument, an unknown flag, an unknown context. */
async function userErrors(ns: string, kc: string): Promise<void> {
  const missing = await runNicoCli(["describe", "nope", kc, "-n", ns]);
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, new RegExp(`no KubernetesCluster nope in namespace ${ns}`));
  const noArg = await runNicoCli(["plan", kc]);
  assert.equal(noArg.code, 2);
  assert.match(noArg.stderr, /plan needs one cluster name/);
  const badFlag = await runNicoCli(["get", "--bogus"]);
  assert.equal(badFlag.code, 2);
  assert.match(badFlag.stderr, /unknown flag --bogus/);
  const badContext = await runNicoCli(["get", kc, "--context", "elsewhere"]);
  assert.equal(badContext.code, 2);
  assert.match(badContext.stderr, /context "elsewhere" is not defined \(it has: envtest\)/);
  const ctx = await runNicoCli(["get", kc, "--context", "envtest", "-n", ns]);
  assert.equal(ctx.code, 0, ctx.stderr);
  assert.match(ctx.stdout, /^rolling /m);
}

/** kubeconfig: stdout, --file (0600), --merge under a context named after the cluster. */
async function kubeconfigOutputs(cp: ControlPlane, ns: string, kc: string): Promise<void> {
  const secret = await cp.client.get<KubeObject & { data: { value: string } }>(SECRETS, "ready-kubeconfig", ns);
  const expected = atob(secret!.data.value);
  const printed = await runNicoCli(["kubeconfig", "ready", kc, "-n", ns]);
  assert.equal(printed.code, 0, printed.stderr);
  assert.equal(printed.stdout, expected);
  const dir = await Deno.makeTempDir({ prefix: "nico-cli-" });
  const file = `${dir}/ready.kubeconfig`;
  const written = await runNicoCli(["kubeconfig", "ready", kc, "-n", ns, "--file", file]);
  assert.equal(written.code, 0, written.stderr);
  assert.equal(await Deno.readTextFile(file), expected);
  assert.equal((await Deno.stat(file)).mode! & 0o777, 0o600);
  const mine = `${dir}/config`;
  await Deno.writeTextFile(mine, await Deno.readTextFile(cp.kubeconfigPath), { mode: 0o644 });
  const merged = await runNicoCli(["kubeconfig", "ready", kc, "-n", ns, "--merge"], { KUBECONFIG: mine });
  assert.equal(merged.code, 0, merged.stderr);
  assert.match(merged.stderr, /merged context ready into/);
  const doc = parse(await Deno.readTextFile(mine)) as Record<string, { name: string }[] | string>;
  assert.deepEqual((doc.contexts as { name: string }[]).map((c) => c.name).sort(), ["envtest", "ready"]);
  assert.equal(doc["current-context"], "envtest", "merging keeps the current context");
  assert.equal((await Deno.stat(mine)).mode! & 0o777, 0o600);
  const notYet = await runNicoCli(["kubeconfig", "nope", kc, "-n", ns]);
  assert.equal(notYet.code, 1);
  assert.match(notYet.stderr, /no KubernetesCluster nope/);
  await Deno.remove(dir, { recursive: true });
}

Deno.test("nico get, describe and plan print the Ready, mid-rollout and halted clusters (golden)", async () => {
  // A simulated NIO minute lasts 10 s: the halted node's failed attempts are 1.7 s, 3.3 s, 6.7 s, … apart, so it is
  // still being retried (NIO's phase still Ready) while the commands run, and no scheduled tick comes between.
  // Each run takes 3 s, long enough to flag w-r1's host as hanging while its run is under way.
  await using w = await world("cli", {
    cp: await env.get(),
    nio: { applyDelayMs: 3_000, minuteMs: 10_000 },
    nico: false,
  });
  const { cp, ns, nio } = w;
  // Every pass writes what it found (progress is not held back), so once NICO settles the status cannot change
  // under the commands.
  const nico = await w.startNico({ statusDelayMs: 0 });
  await setUp(cp.client, nico, nio, ns);
  const kc = `--kubeconfig=${cp.kubeconfigPath}`;
  await goldenOutputs(ns, kc);
  await factsShown(ns, kc);
  await userErrors(ns, kc);
  await kubeconfigOutputs(cp, ns, kc);
});

Deno.test("kubectl nico: the binary answers as a kubectl plugin when installed as kubectl-nico", async () => {
  const cp = await env.get();
  const dir = await Deno.makeTempDir({ prefix: "nico-plugin-" });
  const main = new URL("../../main.ts", import.meta.url).pathname;
  // What a user installs: an executable named kubectl-nico on PATH (here a wrapper that keeps argv[0]).
  await Deno.writeTextFile(
    `${dir}/kubectl-nico`,
    `#!/usr/bin/env bash\nexec -a kubectl-nico "${Deno.execPath()}" run --allow-all --quiet "${main}" "$@"\n`,
    { mode: 0o755 },
  );
  const kubectlBin = `${await binDir()}/kubectl`;
  const run = async (args: string[]) => {
    const out = await new Deno.Command(kubectlBin, {
      args,
      env: { PATH: `${dir}:${Deno.env.get("PATH")}`, KUBECONFIG: cp.kubeconfigPath },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const dec = new TextDecoder();
    return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
  };
  const help = await run(["nico"]);
  assert.equal(help.code, 0, help.stderr);
  assert.match(help.stdout, /Usage: kubectl nico <command>/);
  assert.doesNotMatch(help.stdout, /\brun\b +run the operator/, "the plugin does not offer to run the operator");
  const list = await run(["nico", "get", "-A"]);
  assert.equal(list.code, 0, list.stderr);
  assert.match(list.stdout + list.stderr, /NAMESPACE|No clusters found/);
  await Deno.remove(dir, { recursive: true });
});
