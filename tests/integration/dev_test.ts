/**
 * `nico dev` (`deno task dev`): the local mode end to end as a user runs it
 * (a subprocess: wait for the printed kubeconfig, `kubectl apply` an
 * example, see it Ready, Ctrl-C, nothing left running), and the clear
 * message for a cluster without NIO's CRDs.
 */
import assert from "node:assert/strict";
import type { KubernetesCluster } from "../../crds/kubernetescluster.ts";
import { KubeClient } from "../../lib/kube/client.ts";
import { KUBERNETES_CLUSTERS } from "../../crds/kubernetescluster.ts";
import { binDir, startControlPlane } from "../../testing/envtest/controlplane.ts";
import { eventually } from "../../testing/helpers.ts";
import { freePort } from "../../testing/envtest/process.ts";

const ROOT = new URL("../../", import.meta.url).pathname;

/** Every process below `pid`, from /proc. */
function descendants(pid: number): number[] {
  const parent = new Map<number, number>();
  for (const e of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(e.name)) continue;
    try {
      const stat = Deno.readTextFileSync(`/proc/${e.name}/stat`);
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      parent.set(Number(e.name), ppid);
    } catch {
      // gone meanwhile
    }
  }
  const out: number[] = [];
  const walk = (p: number) => {
    for (const [child, pp] of parent) {
      if (pp === p) {
        out.push(child);
        walk(child);
      }
    }
  };
  walk(pid);
  return out;
}

const alive = (pid: number) => {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return false;
  }
};

/** Fails when any of `pids` still runs 10 s later; kills the leftovers (they are this test's) so nothing hangs. */
async function gone(pids: number[]): Promise<void> {
  try {
    await eventually("every child process gone", () => pids.every((p) => !alive(p)), 10_000);
  } catch (err) {
    const left = pids.filter(alive);
    for (const p of left) Deno.kill(p, "SIGKILL");
    throw new Error(`${err}; still running: ${left.join(", ")}`);
  }
}

/** `nico dev` as a user starts it, its stdout and stderr collected together. */
interface DevProcess {
  pid: number;
  output(): string;
  /** Ctrl-C: asserts a clean exit and that every process below it is gone; answers those processes. */
  interrupt(): Promise<number[]>;
  /** Whatever happened, the process ends (SIGKILL when still running). */
  kill(): Promise<void>;
}

function spawnDev(args: string[], env: Record<string, string> = {}): DevProcess {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", `${ROOT}main.ts`, "dev", ...args],
    cwd: ROOT,
    env,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let output = "";
  const dec = new TextDecoder();
  const drain = (s: ReadableStream<Uint8Array>) =>
    s.pipeTo(new WritableStream({ write: (chunk) => void (output += dec.decode(chunk)) }));
  const drained = Promise.all([drain(child.stdout), drain(child.stderr)]);
  return {
    pid: child.pid,
    output: () => output,
    async interrupt() {
      const running = descendants(child.pid);
      child.kill("SIGINT");
      assert.equal((await child.status).code, 0, output.slice(-3000));
      await gone(running);
      await drained;
      return running;
    },
    async kill() {
      try {
        child.kill("SIGKILL");
      } catch {
        // already exited
      }
      await child.status;
    },
  };
}

Deno.test("deno task dev --local: a kubeconfig to use, an example cluster reaches Ready, Ctrl-C leaves nothing behind", async () => {
  const dir = await Deno.makeTempDir({ prefix: "nico-dev-test-" });
  const dev = spawnDev(["--local", "--dir", `${dir}/dev`]);
  let client: KubeClient | undefined;
  try {
    const kubeconfig = await eventually(
      "the printed kubeconfig",
      () => /export KUBECONFIG=(\S+)/.exec(dev.output())?.[1],
      600_000,
      200,
    );
    assert.equal((await Deno.stat(kubeconfig)).mode! & 0o777, 0o600);
    assert.match(dev.output(), /kubectl apply -f examples\/cluster-selector\.yaml/);
    const apply = await new Deno.Command(`${await binDir()}/kubectl`, {
      args: ["apply", "-f", `${ROOT}examples/cluster-selector.yaml`],
      env: { KUBECONFIG: kubeconfig },
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(apply.code, 0, new TextDecoder().decode(apply.stderr));
    client = KubeClient.load(kubeconfig);
    await eventually("the example cluster Ready", async () => {
      const c = await client!.get<KubernetesCluster>(KUBERNETES_CLUSTERS, "demo", "demo");
      return c?.status?.phase === "Ready";
    }, 90_000);
    await client.close();
    client = undefined;

    const running = await dev.interrupt();
    assert.ok(running.length >= 3, `expected the control plane and NICO below nico dev, found ${running.length}`);
    assert.match(dev.output(), /nico stopped/);
    assert.equal(await Deno.stat(kubeconfig).then(() => true, () => false), false, "the kubeconfig is removed");
  } finally {
    await client?.close();
    await dev.kill();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});

Deno.test("deno task dev against a cluster without NIO says NIO's CRDs are missing and how to go on", async () => {
  await using cp = await startControlPlane({ crds: [`${ROOT}crds/kubernetescluster.yaml`] });
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", `${ROOT}main.ts`, "dev", "--kubeconfig", cp.kubeconfigPath],
    cwd: ROOT,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stderr = new TextDecoder().decode(out.stderr);
  assert.equal(out.code, 1, stderr);
  assert.match(stderr, /NIO's CRDs are missing in the cluster at https:\/\/127\.0\.0\.1:\d+/);
  assert.match(stderr, /install NIO in that cluster/);
  assert.match(stderr, /deno task dev --install-nio/);
  assert.match(stderr, /deno task dev --local/);
  assert.doesNotMatch(stderr, /404 page not found/);
});

Deno.test("deno task dev --install-nio: NIO's development CRDs and the simulated NIO in that cluster; Ctrl-C stops NICO", async () => {
  await using cp = await startControlPlane({ crds: [`${ROOT}crds/kubernetescluster.yaml`] });
  const dev = spawnDev(["--kubeconfig", cp.kubeconfigPath, "--install-nio"]);
  try {
    await eventually(
      "NICO started",
      () => dev.output().includes('"nico started"') || dev.output().includes("nico started"),
      60_000,
    );
    const output = dev.output();
    assert.match(output, /installed NIO's development CRDs in the cluster at/);
    assert.match(output, /The admission webhook is off/);
    assert.match(output, /"level":"info"/, "JSON logs when stderr is not a terminal");
    const crds = await cp.kubectl(["get", "crd", "machines.nio.homystack.com", "-o", "name"]);
    assert.equal(crds.code, 0, crds.stderr);
    await dev.interrupt();
  } finally {
    await dev.kill();
  }
});

Deno.test("deno task dev with a configured cluster that does not answer falls back to the local control plane", async () => {
  const dir = await Deno.makeTempDir({ prefix: "nico-dev-test-" });
  const port = freePort();
  const kubeconfig = `${dir}/down.kubeconfig`;
  await Deno.writeTextFile(
    kubeconfig,
    JSON.stringify({
      apiVersion: "v1",
      kind: "Config",
      clusters: [{ name: "down", cluster: { server: `https://127.0.0.1:${port}` } }],
      users: [{ name: "me", user: { token: "not-a-secret" } }],
      contexts: [{ name: "down", context: { cluster: "down", user: "me" } }],
      "current-context": "down",
    }),
  );
  const dev = spawnDev(["--dir", `${dir}/dev`], { KUBECONFIG: kubeconfig });
  try {
    await eventually("the printed kubeconfig", () => /export KUBECONFIG=(\S+)/.exec(dev.output())?.[1], 600_000, 200);
    assert.match(dev.output(), new RegExp(`the configured cluster https://127\\.0\\.0\\.1:${port} does not answer`));
    await dev.interrupt();
  } finally {
    await dev.kill();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});
