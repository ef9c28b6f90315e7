import assert from "node:assert/strict";
import { stringify } from "yaml";
import { nixString } from "../../core/render/clusternix.ts";
import { desiredConfigurations, resolveEndpoint, specHash } from "../../core/render/desired.ts";
import { configName, configNameFits, legacyConfigName } from "../../core/contract/names.ts";
import { configNameOf, selectMachines } from "../../core/machines/selection.ts";
import type { KubernetesClusterSpecInput } from "../../crds/kubernetescluster.ts";
import type { Machine, NioGeneration } from "../../core/contract/nio.ts";
import { cluster, machine, NS, ownedConfig, UID } from "../../testing/objects.ts";
import { assertGolden } from "../golden.ts";

const YAML_OPTS = { lineWidth: 0, blockQuote: "literal" } as const;

function render(
  spec: KubernetesClusterSpecInput,
  machines: Machine[],
  name = "prod",
  selectFrom = machines,
  nio: NioGeneration = "v1",
  etcd?: { clientPort: number },
) {
  const c = cluster(spec, name);
  const selection = selectMachines({ cluster: c, machines: selectFrom, configurations: [] });
  const bootstrap = selection.controlPlane.members[0]!;
  const endpoint = resolveEndpoint(c.spec, machines.find((m) => m.metadata.name === bootstrap), bootstrap);
  return desiredConfigurations({
    cluster: c,
    selection,
    machines,
    bootstrap,
    endpoint,
    gitRepo: c.spec.gitRepo ?? "https://git.example.test/default-flake.git",
    nio,
    etcd,
  });
}

Deno.test("desired configurations: golden files", async (t) => {
  await t.step("one control-plane node", async () => {
    const out = render({ controlPlane: { machines: ["solo"] } }, [machine("solo", { host: "127.0.0.10" })]);
    await assertGolden("desired-single.yaml", stringify(out, YAML_OPTS));
  });
  await t.step(
    "three control-plane nodes and two workers, with endpoint, subdir, ref, credentials, SSH keys",
    async () => {
      const machines = [
        ...["cp-1", "cp-2", "cp-3"].map((n, i) => machine(n, { labels: { role: "cp" }, host: `127.0.0.${i + 1}` })),
        ...["w-1", "w-2"].map((n, i) => machine(n, { labels: { role: "worker" }, host: `127.0.0.${i + 11}` })),
      ];
      const out = render(
        {
          gitRepo: "https://git.example.test/clusters.git",
          ref: "v1.2.0",
          configurationSubdir: "clusters/prod",
          credentialsRef: { name: "git-creds" },
          machineSshKey: true,
          controlPlaneEndpoint: { host: "api.prod.example.test" },
          controlPlane: { machineSelector: { matchLabels: { role: "cp" } }, count: 3 },
          dataPlane: { machineSelector: { matchLabels: { role: "worker" } }, count: 2 },
        },
        machines,
        "prod",
        machines,
        "v1",
        { clientPort: 2379 },
      );
      assert.equal(out.length, 5);
      await assertGolden("desired-ha.yaml", stringify(out, YAML_OPTS));
    },
  );
  await t.step("addresses that need escaping", async () => {
    // Selection refuses such a host; cluster.nix still escapes whatever reaches it (defence in depth).
    const odd = machine("odd", { host: 'we"ird\\${host}\n' });
    const out = render({ controlPlane: { machines: ["odd"] } }, [odd], "esc", [machine("odd")]);
    await assertGolden("desired-escaping.yaml", stringify(out, YAML_OPTS));
  });
});

Deno.test("every node gets the same cluster.nix, and only control-plane nodes get the CA", () => {
  const machines = [machine("a"), machine("b"), machine("c")];
  const out = render({ controlPlane: { machines: ["a"] }, dataPlane: { machines: ["b", "c"] } }, machines);
  const files = out.map((c) => c.spec.additionalFiles);
  const nix = files.map((f) => f.find((x) => x.path === "cluster.nix"));
  assert.ok(nix.every((n) => n && "inline" in n && n.inline === (nix[0] as { inline: string }).inline));
  const withCa = out.filter((c) => c.spec.additionalFiles.some((f) => f.path === "cluster-ca.key")).map((c) =>
    c.spec.machineRef.name
  );
  assert.deepEqual(withCa, ["a"]);
  assert.ok(
    out.every((c) =>
      c.spec.onRemoveFlake === "#minimal" && c.spec.flake === `#${c.spec.machineRef.name}` && !c.spec.fullInstall
    ),
  );
});

Deno.test("secret files by role: the server token and the CA key never reach a worker", async (t) => {
  const machines = [machine("a"), machine("b")];
  const files = (spec: Partial<KubernetesClusterSpecInput>) =>
    Object.fromEntries(
      render({ controlPlane: { machines: ["a"] }, dataPlane: { machines: ["b"] }, ...spec }, machines).map((c) => [
        c.metadata.labels?.["nico.homystack.com/role"],
        c.spec.additionalFiles.map((f) => "secretRef" in f ? `${f.path}<-${f.secretRef.name}` : f.path),
      ]),
    );
  await t.step("default: no SSH key", () => {
    assert.deepEqual(files({}), {
      "control-plane": [
        "cluster.nix",
        "join-token<-prod-join-token",
        "agent-token<-prod-agent-token",
        "cluster-ca.crt<-prod-ca",
        "cluster-ca.key<-prod-ca-key",
      ],
      "worker": ["cluster.nix", "agent-token<-prod-agent-token"],
    });
  });
  await t.step("an etcd CA NICO issued: control-plane nodes only, and cluster.nix names the client port", () => {
    const out = render(
      { controlPlane: { machines: ["a"] }, dataPlane: { machines: ["b"] } },
      machines,
      "prod",
      machines,
      "v1",
      {
        clientPort: 12379,
      },
    );
    const paths = out.map((c) =>
      c.spec.additionalFiles.map((f) => "secretRef" in f ? `${f.path}<-${f.secretRef.name}` : f.path)
    );
    assert.deepEqual(paths[0]!.slice(5), ["etcd-ca.crt<-prod-etcd-ca", "etcd-ca.key<-prod-etcd-ca-key"]);
    assert.deepEqual(paths[1], ["cluster.nix", "agent-token<-prod-agent-token"]);
    const nix = out[1]!.spec.additionalFiles[0]!;
    assert.ok("inline" in nix && nix.inline.includes("  etcd = { clientPort = 12379; };\n"));
    const none = render({ controlPlane: { machines: ["a"] } }, machines)[0]!.spec.additionalFiles[0]!;
    assert.ok("inline" in none && !none.inline.includes("etcd"), "no etcd CA: cluster.nix as before");
  });
  await t.step("machineSshKey: true adds each Machine's own key", () => {
    const f = files({ machineSshKey: true });
    assert.ok(f["control-plane"]?.includes("machine-ssh-key<-a-ssh"));
    assert.deepEqual(f["worker"], ["cluster.nix", "agent-token<-prod-agent-token", "machine-ssh-key<-b-ssh"]);
  });
});

Deno.test("the spec hash changes with the rendered spec and only then", () => {
  const a = render({ controlPlane: { machines: ["a"] } }, [machine("a")])[0]!;
  const b = render({ controlPlane: { machines: ["a"] } }, [machine("a")])[0]!;
  const c = render({ controlPlane: { machines: ["a"] }, ref: "main" }, [machine("a")])[0]!;
  assert.equal(specHash(a.spec), specHash(b.spec));
  assert.notEqual(specHash(a.spec), specHash(c.spec));
  const reordered = Object.fromEntries(Object.entries(a.spec).reverse()) as typeof a.spec;
  assert.notDeepEqual(Object.keys(reordered), Object.keys(a.spec));
  assert.equal(specHash(reordered), specHash(a.spec));
});

Deno.test("nixString escapes everything that could end or interpolate a string", async (t) => {
  const cases: [string, string][] = [
    ["plain", '"plain"'],
    ['quote"', '"quote\\""'],
    ["back\\slash", '"back\\\\slash"'],
    ["${inject}", '"\\${inject}"'],
    ["$notinterp", '"$notinterp"'],
    ["new\nline\ttab\r", '"new\\nline\\ttab\\r"'],
  ];
  for (const [input, want] of cases) await t.step(JSON.stringify(input), () => assert.equal(nixString(input), want));
});

Deno.test("configuration names: no two (cluster, machine) pairs share one; legacy children are adopted", () => {
  // The collision of the old scheme: cluster x with Machine y-z, cluster x-y with Machine z.
  assert.notEqual(configName("x", "y-z"), configName("x-y", "z"));
  assert.equal(legacyConfigName("x", "y-z"), legacyConfigName("x-y", "z"), "the old scheme collided");
  assert.equal(configName("prod", "cp-1"), "prod.cp-1");
  assert.ok(configNameFits("c".repeat(63), "m".repeat(189)));
  assert.ok(!configNameFits("c".repeat(63), "m".repeat(190)));
  const legacy = ownedConfig("prod", "cp-1", "control-plane");
  legacy.metadata.name = legacyConfigName("prod", "cp-1");
  const nameOf = configNameOf({ name: "prod", namespace: NS, uid: UID }, [legacy]);
  assert.equal(nameOf("cp-1"), "prod-cp-1", "an existing child keeps its name");
  assert.equal(nameOf("cp-2"), "prod.cp-2", "a new child gets the new name");
  const foreign = configNameOf({ name: "prod", namespace: NS, uid: "another-uid" }, [legacy]);
  assert.equal(foreign("cp-1"), "prod.cp-1", "another cluster's child is never adopted");
});

Deno.test("files land next to flake.nix: NIO v1 writes at the checkout's root, the older NIO into the subdir", async (t) => {
  const machines = [machine("cp-1"), machine("w-1")];
  const spec = { controlPlane: { machines: ["cp-1"] }, dataPlane: { machines: ["w-1"] } };
  const paths = (s: KubernetesClusterSpecInput, nio: NioGeneration) =>
    render(s, machines, "prod", machines, nio).map((c) => c.spec.additionalFiles.map((f) => f.path));
  await t.step("v1 with a subdir", () => {
    const [cp, w] = paths({ ...spec, configurationSubdir: "clusters/prod/" }, "v1");
    assert.deepEqual(cp, [
      "clusters/prod/cluster.nix",
      "clusters/prod/join-token",
      "clusters/prod/agent-token",
      "clusters/prod/cluster-ca.crt",
      "clusters/prod/cluster-ca.key",
    ]);
    assert.deepEqual(w, ["clusters/prod/cluster.nix", "clusters/prod/agent-token"]);
  });
  await t.step("older with a subdir", () => {
    const [, w] = paths({ ...spec, configurationSubdir: "clusters/prod" }, "older");
    assert.deepEqual(w, ["cluster.nix", "agent-token"]);
  });
  await t.step("no subdir: the same for both", () => {
    assert.deepEqual(paths(spec, "v1"), paths(spec, "older"));
  });
});

Deno.test("NIO v1's own fields pass through, only to NIO v1; fullInstall is written only when true", () => {
  const machines = [machine("cp-1")];
  const nio = {
    dayTwoSchedule: "0 3 * * *",
    jobTemplate: { image: "nixos/nix:2.24", nodeSelector: { pool: "builders" } },
    storeRef: { name: "cache" },
    builderRef: { name: "arm" },
  };
  const spec = { controlPlane: { machines: ["cp-1"] }, nio };
  const [v1] = render(spec, machines, "prod", machines, "v1");
  assert.equal(v1!.spec.dayTwoSchedule, "0 3 * * *");
  assert.deepEqual(v1!.spec.jobTemplate, nio.jobTemplate);
  assert.deepEqual(v1!.spec.storeRef, { name: "cache" });
  assert.deepEqual(v1!.spec.builderRef, { name: "arm" });
  assert.equal("fullInstall" in v1!.spec, false);
  const [older] = render(spec, machines, "prod", machines, "older");
  for (const f of ["dayTwoSchedule", "jobTemplate", "storeRef", "builderRef"]) assert.equal(f in older!.spec, false, f);
  const [wipe] = render({ ...spec, fullInstall: true }, machines, "prod", machines, "v1");
  assert.equal(wipe!.spec.fullInstall, true);
  // The schedule says when NIO runs, not what: it is not part of the spec hash.
  const [other] = render({ ...spec, nio: { ...nio, dayTwoSchedule: "*/5 * * * *" } }, machines, "prod", machines, "v1");
  assert.equal(
    other!.metadata.annotations!["nico.homystack.com/spec-hash"],
    v1!.metadata.annotations!["nico.homystack.com/spec-hash"],
  );
});

Deno.test("cluster.nix names one configuration; a new identity or commit changes it, a schedule does not", () => {
  const machines = [machine("cp-1"), machine("w-1")];
  const spec = { controlPlane: { machines: ["cp-1"] }, dataPlane: { machines: ["w-1"] } };
  const idOf = (
    extra: Partial<Parameters<typeof desiredConfigurations>[0]> = {},
    s: KubernetesClusterSpecInput = spec,
  ) => {
    const c = cluster(s);
    const selection = selectMachines({ cluster: c, machines, configurations: [] });
    const cfgs = desiredConfigurations({
      cluster: c,
      selection,
      machines,
      bootstrap: "cp-1",
      endpoint: { host: "127.0.0.1", port: 6443 },
      gitRepo: "https://git.example.test/flake.git",
      nio: "v1",
      identity: "1111",
      ...extra,
    });
    const ids = cfgs.map((x) => x.metadata.annotations!["nico.homystack.com/configuration"]!);
    const inFile = cfgs.map((x) =>
      /configuration = "([0-9a-f]+)";/.exec((x.spec.additionalFiles[0] as { inline: string }).inline)?.[1]
    );
    assert.deepEqual(inFile, ids, "cluster.nix carries the id the configuration is annotated with");
    assert.equal(new Set(ids).size, 1, "every node of the cluster gets the same id");
    return ids[0]!;
  };
  const base = idOf();
  assert.notEqual(idOf({ identity: "2222" }), base, "a re-key changes it");
  assert.notEqual(idOf({ revision: "a".repeat(40) }), base, "a new commit changes it");
  assert.equal(idOf({}, { ...spec, nio: { dayTwoSchedule: "0 3 * * *" } }), base, "the schedule does not");
  assert.notEqual(idOf({}, { ...spec, nio: { storeRef: { name: "cache" } } }), base, "what NIO gets does");
});
