/**
 * What is wrong with a backup store is named on the cluster (`EtcdBackedUp=False` and a Warning Event, each
 * naming the field and the fix, never a secret): a bucket the store does not have, keys it refuses, a Secret
 * that is not there, a Secret without the keys, a TLS store whose CA is not trusted (until caSecret names it).
 * Against real stores (versitygw).
 */
import assert from "node:assert/strict";
import type { KubernetesCluster } from "../../crds/kubernetescluster.ts";
import { KUBERNETES_CLUSTERS } from "../../crds/kubernetescluster.ts";
import { sharedControlPlane } from "../../testing/helpers.ts";
import { condition, startScenario } from "../../testing/scenario.ts";
import { backupSpec, secret, storeFor } from "../backup_kit.ts";
import { startS3Server } from "../../testing/s3.ts";
import { etcdEventsWhen } from "../etcd_kit.ts";

const env = sharedControlPlane();

const backedUp = (reason: string) => (c: KubernetesCluster) => condition(c, "EtcdBackedUp")?.reason === reason;

Deno.test({
  name: "a missing bucket, refused keys, a missing Secret and missing keys are each named on the cluster",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await using s = await startScenario(await env.get(), "backup-errors", { hostBlock: 187 });
    const store = await storeFor(s, "127.0.187.250");
    const wrongSecret = "not-the-secret-" + crypto.randomUUID();
    await secret(s, "wrong", { accessKeyId: store.accessKeyId, secretAccessKey: wrongSecret });
    await secret(s, "partial", { accessKeyId: store.accessKeyId });
    const spec = backupSpec(store);
    await s.createCluster({
      gitRepo: "https://git.example.test/flake.git",
      controlPlane: { machines: ["cp-1"] },
      dataPlane: { machines: [] },
      etcd: { backup: { ...spec, store: { ...spec.store, bucket: "missing" } } },
    });
    const rows: [Record<string, unknown>, string, RegExp][] = [
      [{}, "BucketNotFound", /^spec\.etcd\.backup\.store\.bucket: .*no bucket missing.*create it/],
      [
        { bucket: "etcd", credentialsSecret: { name: "wrong" } },
        "StoreCredentialsRefused",
        /^spec\.etcd\.backup\.store\.credentialsSecret: .*refuses the keys of Secret wrong/,
      ],
      [
        { credentialsSecret: { name: "absent" } },
        "SecretNotFound",
        /^spec\.etcd\.backup\.store\.credentialsSecret: no Secret absent in namespace .*; create it/,
      ],
      [
        { credentialsSecret: { name: "partial" } },
        "SecretKeysMissing",
        /^spec\.etcd\.backup\.store\.credentialsSecret: Secret partial has no secretAccessKey/,
      ],
      [{ credentialsSecret: { name: "s3" } }, "NoBackupYet", /holds no backup/],
    ];
    for (const [change, reason, message] of rows) {
      if (Object.keys(change).length) {
        const patch = { spec: { etcd: { backup: { store: change } } } };
        await s.client.mergePatch(KUBERNETES_CLUSTERS, "c", s.ns, patch);
      }
      const c = await s.until(`EtcdBackedUp ${reason}`, backedUp(reason), 90_000);
      const cond = condition(c, "EtcdBackedUp")!;
      assert.match(cond.message, message);
      assert.ok(!cond.message.includes(wrongSecret) && !cond.message.includes(store.secretAccessKey));
      if (reason === "NoBackupYet") continue;
      await etcdEventsWhen(
        s,
        `a Warning for ${reason}`,
        (events) =>
          events.some((e) => e.reason === "EtcdBackupFailed" && message.test(e.message.replace(/^check: /, ""))),
      );
    }
    // A store on TLS with a private CA: refused until caSecret names its CA.
    const tls = await startS3Server({ host: "127.0.187.251", tls: true, buckets: ["etcd"] });
    s.defer(() => tls.stop());
    await secret(s, "s3-tls", { accessKeyId: tls.accessKeyId, secretAccessKey: tls.secretAccessKey });
    await secret(s, "store-ca", { "ca.crt": tls.ca!.certPem });
    const onTls = { endpoint: tls.endpoint, credentialsSecret: { name: "s3-tls" } };
    await s.client.mergePatch(KUBERNETES_CLUSTERS, "c", s.ns, { spec: { etcd: { backup: { store: onTls } } } });
    const refused = await s.until("EtcdBackedUp StoreTLSRefused", backedUp("StoreTLSRefused"), 90_000);
    assert.match(
      condition(refused, "EtcdBackedUp")!.message,
      /^spec\.etcd\.backup\.store\.caSecret: TLS with the store at https:/,
    );
    const withCa = { caSecret: { name: "store-ca" } };
    await s.client.mergePatch(KUBERNETES_CLUSTERS, "c", s.ns, { spec: { etcd: { backup: { store: withCa } } } });
    await s.until("the TLS store answers with its CA", backedUp("NoBackupYet"), 90_000);
  },
});
