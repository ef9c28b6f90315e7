/**
 * `nico dev` (`deno task dev`): the local mode end to end as a user runs it
 * (a subprocess: wait for the printed kubeconfig, `kubectl apply` an
 * example, see it Ready, Ctrl-C, nothing left running), and the clear
 * message for a cluster without NIO's CRDs.
 */
import assert from "node:assert/strict";
import type { KubernetesCluster } from "../crds/kubernetescluster.ts";
import { KubeClient } from "../lib/kube/client.ts";
import { KUBERNETES_CLUSTERS } from "../crds/kubernetescluster.ts";
import { binDir, startControlPlane } from "../testing/envtest/controlplane.ts";
import { eventually } from "../testing/helpers.ts";

const ROOT = new URL("../", import.meta.url).pathname;

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

Deno.test("deno task dev --local: a kubeconfig to use, an example cluster reaches Ready, Ctrl-C leaves nothing behind", async () => {
  const dir = await Deno.makeTempDir({ prefix: "nico-dev-test-" });
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", `${ROOT}main.ts`, "dev", "--local", "--dir", `${dir}/dev`],
    cwd: ROOT,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let output = "";
  const dec = new TextDecoder();
  const drain = (s: ReadableStream<Uint8Array>) =>
    s.pipeTo(new WritableStream({ write: (chunk) => void (output += dec.decode(chunk)) }));
  const drained = Promise.all([drain(child.stdout), drain(child.stderr)]);
  let client: KubeClient | undefined;
  try {
    const kubeconfig = await eventually(
      "the printed kubeconfig",
      () => /export KUBECONFIG=(\S+)/.exec(output)?.[1],
      600_000,
      200,
    );
    assert.equal((await Deno.stat(kubeconfig)).mode! & 0o777, 0o600);
    assert.match(output, /kubectl apply -f examples\/cluster-selector\.yaml/);
    const apply = await new Deno.Command(`${await binDir()}/kubectl`, {
      args: ["apply", "-f", `${ROOT}examples/cluster-selector.yaml`],
      env: { KUBECONFIG: kubeconfig },
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(apply.code, 0, dec.decode(apply.stderr));
    client = KubeClient.load(kubeconfig);
    await eventually("the example cluster Ready", async () => {
      const c = await client!.get<KubernetesCluster>(KUBERNETES_CLUSTERS, "demo", "demo");
      return c?.status?.phase === "Ready";
    }, 90_000);
    await client.close();
    client = undefined;

    const running = descendants(child.pid);
    assert.ok(running.length >= 3, `expected the control plane and NICO below nico dev, found ${running.length}`);
    child.kill("SIGINT");
    const status = await child.status;
    assert.equal(status.code, 0, output.slice(-3000));
    await gone(running);
    await drained;
    assert.match(output, /nico stopped/);
    assert.equal(await Deno.stat(kubeconfig).then(() => true, () => false), false, "the kubeconfig is removed");
  } finally {
    await client?.close();
    try {
      child.kill("SIGKILL");
    } catch {
      // already exited
    }
    await child.status;
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
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", `${ROOT}main.ts`, "dev", "--kubeconfig", cp.kubeconfigPath, "--install-nio"],
    cwd: ROOT,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let output = "";
  const dec = new TextDecoder();
  const drain = (s: ReadableStream<Uint8Array>) =>
    s.pipeTo(new WritableStream({ write: (chunk) => void (output += dec.decode(chunk)) }));
  const drained = Promise.all([drain(child.stdout), drain(child.stderr)]);
  try {
    await eventually(
      "NICO started",
      () => output.includes('"nico started"') || output.includes("nico started"),
      60_000,
    );
    assert.match(output, /installed NIO's development CRDs in the cluster at/);
    assert.match(output, /The admission webhook is off/);
    assert.match(output, /"level":"info"/, "JSON logs when stderr is not a terminal");
    const crds = await cp.kubectl(["get", "crd", "machines.nio.homystack.com", "-o", "name"]);
    assert.equal(crds.code, 0, crds.stderr);
    const running = descendants(child.pid);
    child.kill("SIGINT");
    assert.equal((await child.status).code, 0, output.slice(-3000));
    await gone(running);
    await drained;
  } finally {
    try {
      child.kill("SIGKILL");
    } catch {
      // already exited
    }
    await child.status;
  }
});

Deno.test("deno task dev with a configured cluster that does not answer falls back to the local control plane", async () => {
  const dir = await Deno.makeTempDir({ prefix: "nico-dev-test-" });
  const port = (() => {
    const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const p = (l.addr as Deno.NetAddr).port;
    l.close();
    return p;
  })();
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
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", `${ROOT}main.ts`, "dev", "--dir", `${dir}/dev`],
    cwd: ROOT,
    env: { KUBECONFIG: kubeconfig },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let output = "";
  const dec = new TextDecoder();
  const drain = (s: ReadableStream<Uint8Array>) =>
    s.pipeTo(new WritableStream({ write: (chunk) => void (output += dec.decode(chunk)) }));
  const drained = Promise.all([drain(child.stdout), drain(child.stderr)]);
  try {
    await eventually("the printed kubeconfig", () => /export KUBECONFIG=(\S+)/.exec(output)?.[1], 600_000, 200);
    assert.match(output, new RegExp(`the configured cluster https://127\\.0\\.0\\.1:${port} does not answer`));
    const running = descendants(child.pid);
    child.kill("SIGINT");
    assert.equal((await child.status).code, 0, output.slice(-3000));
    await gone(running);
    await drained;
  } finally {
    try {
      child.kill("SIGKILL");
    } catch {
      // already exited
    }
    await child.status;
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});
