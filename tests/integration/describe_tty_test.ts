/**
 * `nico describe` in a real terminal: tmux runs it in an 80-column pane and
 * `capture-pane -e` shows the colours it drew and that every line fits. With
 * NO_COLOR set, the same terminal gets plain text.
 */
import assert from "node:assert/strict";
import { KUBERNETES_CLUSTERS } from "../../crds/kubernetescluster.ts";
import { NIXOS_CONFIGURATIONS } from "../../core/contract/nio.ts";
import { NEVER_FINISH_ANNOTATION } from "../../testing/sim-nio.ts";
import { eventually } from "../../testing/helpers.ts";
import { createMachines, machinesDiscovered } from "../../testing/nico.ts";
import { world } from "../../testing/world.ts";
import { visibleLength } from "../../cli/term.ts";
import { configName } from "../../core/contract/names.ts";

const MAIN = new URL("../../main.ts", import.meta.url).pathname;
const WIDTH = 80;

const hasTmux = (await new Deno.Command("bash", { args: ["-c", "command -v tmux"], stdout: "null" }).output()).success;

/** Runs `command` in a fresh tmux server of our own and answers the pane's content with escape codes. */
async function inTmux(command: string): Promise<string> {
  const socket = `nico-test-${crypto.randomUUID().slice(0, 8)}`;
  const tmux = (...args: string[]) =>
    new Deno.Command("tmux", { args: ["-L", socket, ...args], stdout: "piped", stderr: "piped" }).output();
  const started = await tmux(
    "new-session",
    "-d",
    "-x",
    String(WIDTH),
    "-y",
    "40",
    `bash -c '${command}; echo __done__; sleep 600'`,
  );
  assert.ok(started.success, new TextDecoder().decode(started.stderr));
  try {
    return await eventually(
      "the command to finish in tmux",
      async () => {
        const out = await tmux("capture-pane", "-p", "-e", "-J", "-t", "0");
        const text = new TextDecoder().decode(out.stdout);
        return text.includes("__done__") ? text.slice(0, text.indexOf("__done__")) : undefined;
      },
      30_000,
      200,
    );
  } finally {
    await tmux("kill-server");
  }
}

Deno.test({
  name: "describe in an 80-column terminal: coloured states, every line fits; NO_COLOR turns colour off",
  ignore: !hasTmux,
  async fn() {
    await using w = await world("tty", { nio: { applyDelayMs: 150 } });
    const { cp, ns } = w;
    await createMachines(cp.client, ns, ["cp-1", "w-1", "w-2"]);
    await machinesDiscovered(cp.client, ns, ["cp-1", "w-1", "w-2"]);
    await cp.client.create(KUBERNETES_CLUSTERS, {
      metadata: { name: "prod", namespace: ns },
      spec: {
        gitRepo: "https://git.example.test/v1.git",
        controlPlane: { machines: ["cp-1"] },
        dataPlane: { machines: ["w-1", "w-2"] },
      },
    });
    await w.until("Ready", (c) => c.status?.phase === "Ready", 60_000, "prod");
    await cp.client.mergePatch(NIXOS_CONFIGURATIONS, configName("prod", "w-1"), ns, {
      metadata: { annotations: { [NEVER_FINISH_ANNOTATION]: "true" } },
    });
    await cp.client.mergePatch(KUBERNETES_CLUSTERS, "prod", ns, {
      spec: { gitRepo: "https://git.example.test/v2.git" },
    });
    await w.until("w-1 updating", (c) => c.status?.rollout?.updating?.join() === "w-1", 30_000, "prod");

    const run =
      `${Deno.execPath()} run --allow-all --quiet ${MAIN} describe prod --kubeconfig ${cp.kubeconfigPath} -n ${ns}`;
    const coloured = await inTmux(`env -u NO_COLOR ${run}`);
    const lines = coloured.split("\n").filter((l) => l.trim() !== "");
    // deno-lint-ignore no-control-regex
    const bare = coloured.replace(/\x1b\[[0-9;]*m/g, "");
    assert.match(bare, /NAME +STATE +NIO PHASE +REVISION +ROLLOUT/);
    // NIO v1 says Ready (or, a moment after the change, Converging) before it ran the new spec; NICO says Applying
    // (its judgement, from the run Jobs).
    assert.match(bare, /Machine\/w-1 +Applying +(Ready|Converging) +- +updating/);
    assert.ok(lines.length >= 6, coloured);
    for (const line of lines) assert.ok(visibleLength(line) <= WIDTH, `wider than ${WIDTH}: ${line}`);
    assert.ok(
      lines.some((l) => l.includes("Ready=False WaitingForWorkers") && l.includes("…")),
      "conditions get their own, cut line",
    );
    // Green for Ready nodes, yellow for the node converging, cyan for the pending one.
    const sgr = (code: number, text: string) => `\x1b[${code}m${text}`;
    assert.ok(lines.some((l) => l.includes("Machine/cp-1") && l.includes(sgr(32, "Ready"))), coloured);
    assert.ok(lines.some((l) => l.includes("Machine/w-1") && l.includes(sgr(33, "Applying"))), coloured);
    assert.ok(lines.some((l) => l.includes("Machine/w-2") && l.includes(sgr(36, "pending"))), coloured);

    const plain = await inTmux(`NO_COLOR=1 ${run}`);
    assert.match(plain, /Machine\/w-1/);
    assert.ok(!plain.includes("\x1b[3"), "NO_COLOR: no colour");
  },
});
