/**
 * The leader's fence on a real API server, in-process with short timings:
 * when someone else holds the Lease, the leader's AbortSignal is aborted by
 * the renew deadline (not a retry period later), and from that moment a
 * client gated by the fence refuses writes without sending them.
 */
import assert from "node:assert/strict";
import { WriteRefusedError } from "../../lib/kube/errors.ts";
import { LEASES } from "../../lib/kube/resources.ts";
import { KUBERNETES_CLUSTERS } from "../../crds/kubernetescluster.ts";
import { LeaderFence, type Lease, runLeaderElection } from "../../lib/leader.ts";
import { silentLogger } from "../../lib/runtime/log.ts";
import { eventually, sharedControlPlane } from "../../testing/helpers.ts";

const env = sharedControlPlane();

Deno.test("a leader whose Lease is taken stops at its renew deadline, and its gated client refuses writes", async () => {
  const cp = await env.get();
  const ns = await cp.namespace("fence");
  const fence = new LeaderFence();
  const gated = cp.client.with({ mayWrite: () => fence.holds() });
  const renewDeadlineMs = 1_500;
  let leadingSignal: AbortSignal | undefined;
  let abortedAt = 0;
  const stop = new AbortController();
  const election = runLeaderElection({
    client: cp.client,
    namespace: ns,
    name: "fence",
    identity: "me",
    leaseDurationMs: 3_000,
    renewDeadlineMs,
    retryPeriodMs: 400,
    log: silentLogger,
    fence,
    onStartedLeading: async (signal) => {
      leadingSignal = signal;
      await new Promise<void>((resolve) =>
        signal.addEventListener("abort", () => {
          abortedAt = performance.now();
          resolve();
        }, { once: true })
      );
    },
  }, stop.signal);
  try {
    await eventually("leading", () => leadingSignal !== undefined && fence.holds(), 30_000, 20);
    // While leading, the gated client writes.
    await gated.create(KUBERNETES_CLUSTERS, {
      metadata: { name: "written-while-leading", namespace: ns },
      spec: { gitRepo: "https://git.example.test/x.git", controlPlane: { count: 1 } },
    });

    // Someone else takes the Lease (as a standby would after a long pause of ours).
    const lease = (await cp.client.get<Lease>(LEASES, "fence", ns))!;
    const takenAt = performance.now();
    await cp.client.replace<Lease>(LEASES, {
      ...lease,
      spec: { ...lease.spec, holderIdentity: "thief", renewTime: new Date().toISOString().replace("Z", "000Z") },
    });
    assert.equal(await election, "lost");
    const late = abortedAt - takenAt;
    console.log(
      `leader aborted ${late.toFixed(0)} ms after its Lease was taken (renew deadline ${renewDeadlineMs} ms)`,
    );
    assert.ok(leadingSignal!.aborted);
    assert.ok(late <= renewDeadlineMs + 400, `aborted ${late} ms after the Lease was taken`);
    assert.equal(fence.holds(), false);
    await assert.rejects(
      gated.create(KUBERNETES_CLUSTERS, {
        metadata: { name: "written-after-losing", namespace: ns },
        spec: { gitRepo: "https://git.example.test/x.git", controlPlane: { count: 1 } },
      }),
      WriteRefusedError,
    );
    assert.equal(await cp.client.get(KUBERNETES_CLUSTERS, "written-after-losing", ns), undefined, "nothing was sent");
    // Reads still work through the gated client.
    assert.ok(await gated.get(KUBERNETES_CLUSTERS, "written-while-leading", ns));
    const after = await cp.client.get<Lease>(LEASES, "fence", ns);
    assert.equal(after?.spec?.holderIdentity, "thief", "the deposed leader did not write the Lease back");
  } finally {
    stop.abort();
    await election.catch(() => {});
  }
});
