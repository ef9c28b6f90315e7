/**
 * The example k3s flake's version mapping (examples/k3s-flake/lib/k3s-package.nix) with a real
 * `nix-instantiate` (no nixpkgs: a fake package set with nixpkgs' attribute names): cluster.nix's
 * kubernetesVersion picks `k3s_1_XX`, none picks `k3s`, and a version this nixpkgs has no package for fails the
 * evaluation with a message naming what it has. Ignored without `nix-instantiate` (tests/nix_kit.ts).
 */
import assert from "node:assert/strict";
import type { ClusterNixInput } from "../../core/render/clusternix.ts";
import { NIX_VERSION, nixEval, nixEvalOk, noNix, writeCluster } from "../nix_kit.ts";

const LIB = new URL("../../examples/k3s-flake/lib/", import.meta.url).pathname;

const cluster = (kubernetesVersion?: string): ClusterNixInput => ({
  name: "prod",
  namespace: "infra",
  endpoint: { host: "127.0.0.1", port: 6443 },
  bootstrapNode: "cp-1",
  controlPlane: [{ name: "cp-1", address: "127.0.0.1" }],
  workers: [{ name: "w-1", address: "127.0.0.2" }],
  ...(kubernetesVersion ? { kubernetesVersion } : {}),
});

/** nixpkgs' k3s attributes, as far as the mapping reads them. */
const PKGS = `{
  k3s = { pname = "k3s"; version = "1.33.2+k3s1"; };
  k3s_1_31 = { pname = "k3s_1_31"; version = "1.31.9+k3s1"; };
  k3s_1_32 = { pname = "k3s_1_32"; version = "1.32.5+k3s1"; };
  k3s_1_33 = { pname = "k3s_1_33"; version = "1.33.2+k3s1"; };
  hello = { pname = "hello"; version = "2.12"; };
}`;

/** The package lib/k3s-package.nix picks for the cluster.nix at `file`. */
const pick = (file: string) =>
  nixEval(
    `{ clusterFile }: (import ${LIB}k3s-package.nix {
    cluster = import (/. + clusterFile);
    pkgs = ${PKGS};
  }).pname`,
    { clusterFile: file },
  );

Deno.test({
  name: `cluster.nix's kubernetesVersion picks nixpkgs' k3s_1_XX (${NIX_VERSION ?? "no Nix"})`,
  ignore: noNix,
  fn: async (t) => {
    const cases: [string, string | undefined, string][] = [
      ["no version: nixpkgs' default k3s", undefined, "k3s"],
      ["a minor", "1.31", "k3s_1_31"],
      ["the patch the package is at", "1.32.5", "k3s_1_32"],
      ["a leading v", "v1.33", "k3s_1_33"],
    ];
    for (const [label, version, want] of cases) {
      await t.step(label, async () => {
        const r = await pick(await writeCluster(cluster(version)));
        assert.ok(r.ok, r.stderr);
        assert.equal(r.value, want);
      });
    }
  },
});

Deno.test({
  name: "a version this nixpkgs has no package for fails the evaluation, saying what it has",
  ignore: noNix,
  fn: async (t) => {
    await t.step("a minor without a package", async () => {
      const r = await pick(await writeCluster(cluster("1.29")));
      assert.equal(r.ok, false);
      assert.match(
        r.stderr,
        /nico: cluster\.nix asks for Kubernetes 1\.29 \(spec\.version\), but this nixpkgs has no k3s_1_29 \(it has: k3s_1_31, k3s_1_32, k3s_1_33\); set spec\.version to a version it has, or pin a nixpkgs that has k3s_1_29 in flake\.lock/,
      );
    });
    await t.step("a patch the package is not at", async () => {
      const r = await pick(await writeCluster(cluster("1.31.4")));
      assert.equal(r.ok, false);
      assert.match(
        r.stderr,
        /but k3s_1_31 in this nixpkgs is 1\.31\.9\+k3s1; set spec\.version to 1\.31 \(any patch\) or 1\.31\.9/,
      );
    });
  },
});

Deno.test({
  name: "cluster.nix with kubernetesVersion evaluates to exactly its input",
  ignore: noNix,
  fn: async () => {
    const c = cluster("1.31.4");
    assert.deepStrictEqual(await nixEvalOk("{ f }: import (/. + f)", { f: await writeCluster(c) }), c);
  },
});
