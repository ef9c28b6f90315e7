/**
 * Admission of `spec.etcd.backup`: the Secrets it names must be readable by the requester (asked again when the
 * endpoint or bucket changes, where the same keys would go to another store), live in the cluster's namespace (a
 * namespace field is refused), and the schema refuses a bad endpoint, bucket, prefix or schedule.
 */
import assert from "node:assert/strict";
import { staticLookup } from "../../webhooks/lookup.ts";
import type { SecretAccessCheck } from "../../webhooks/authorize.ts";
import { webhookApp } from "../../webhooks/app.ts";
import { VALIDATE_PATH } from "../../webhooks/paths.ts";
import { cluster, fleet, NS, post, reviewBody, three, withRepo } from "../webhook_kit.ts";

const store = { endpoint: "https://127.0.0.1:9000", bucket: "etcd", credentialsSecret: { name: "s3" } };
const withBackup = (over: Record<string, unknown> = {}, backup: Record<string, unknown> = {}) =>
  cluster(withRepo({ ...three, etcd: { backup: { store: { ...store, ...over }, ...backup } } }));

/** An access check that allows every Secret but `denied`, and records what it was asked. */
function access(denied: string[] = []) {
  const asked: string[] = [];
  const check: SecretAccessCheck = {
    canGetSecret: (
      _user,
      ns,
      name,
    ) => (asked.push(`${ns}/${name}`), Promise.resolve({ allowed: !denied.includes(name) })),
  };
  return { asked, check };
}

async function verdict(a: ReturnType<typeof access>, op: "CREATE" | "UPDATE", object: unknown, old?: unknown) {
  const app = webhookApp({ lookup: staticLookup({ machines: fleet(3) }), access: a.check });
  const res = await post(app, VALIDATE_PATH, reviewBody(op, object, old));
  return { allowed: res.json.response.allowed as boolean, message: String(res.json.response.status?.message ?? "") };
}

Deno.test("backup Secrets: the requester must be allowed to read them, asked when they would go to a new store", async (t) => {
  await t.step("CREATE: every Secret named is asked; one the user may not read refuses", async () => {
    const a = access(["ca"]);
    const v = await verdict(a, "CREATE", withBackup({ caSecret: { name: "ca" } }));
    assert.equal(v.allowed, false);
    assert.match(v.message, /^spec\.etcd\.backup\.store\.caSecret\.name: user .* may not get Secret ca in namespace /m);
    assert.deepEqual(a.asked.sort(), [`${NS}/ca`, `${NS}/s3`]);
  });
  await t.step("UPDATE: the same Secrets and store ask nothing", async () => {
    const a = access();
    const v = await verdict(a, "UPDATE", withBackup({}, { keep: 3 }), withBackup());
    assert.equal(v.allowed, true, v.message);
    assert.deepEqual(a.asked, []);
  });
  await t.step("UPDATE: a new endpoint asks again (the keys would go elsewhere)", async () => {
    const a = access(["s3"]);
    const v = await verdict(a, "UPDATE", withBackup({ endpoint: "https://127.0.0.2" }), withBackup());
    assert.equal(v.allowed, false);
    assert.match(v.message, /spec\.etcd\.backup\.store\.credentialsSecret\.name: user .* may not get Secret s3/);
  });
  await t.step("a namespace on a Secret reference is refused, not dropped", async () => {
    const v = await verdict(access(), "CREATE", withBackup({ credentialsSecret: { name: "s3", namespace: "other" } }));
    assert.equal(v.allowed, false);
    assert.match(v.message, /spec\.etcd\.backup\.store\.credentialsSecret\.namespace: there is no namespace field/);
  });
});

Deno.test("backup schema: a bad endpoint, bucket, prefix or schedule is refused with the field", async (t) => {
  const rows: [string, unknown, RegExp][] = [
    [
      "an endpoint with credentials",
      withBackup({ endpoint: "https://k:s@127.0.0.1" }),
      /spec\.etcd\.backup\.store\.endpoint/,
    ],
    ["a bucket name S3 refuses", withBackup({ bucket: "Etcd_Backups" }), /spec\.etcd\.backup\.store\.bucket/],
    ["an absolute prefix", withBackup({ prefix: "/etcd/" }), /spec\.etcd\.backup\.store\.prefix/],
    ["not a cron schedule", withBackup({}, { schedule: "every day" }), /spec\.etcd\.backup\.schedule: not a cron/],
    ["keep of 0", withBackup({}, { keep: 0 }), /spec\.etcd\.backup\.keep/],
  ];
  for (const [name, object, error] of rows) {
    await t.step(name, async () => {
      const v = await verdict(access(), "CREATE", object);
      assert.equal(v.allowed, false, name);
      assert.match(v.message, error);
    });
  }
  await t.step("a good one passes", async () => {
    const v = await verdict(access(), "CREATE", withBackup({ prefix: "prod/" }, { schedule: "0 3 * * *", keep: 7 }));
    assert.equal(v.allowed, true, v.message);
  });
});
