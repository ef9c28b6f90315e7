/**
 * The example k3s flake (examples/k3s-flake/) against NICO's own cluster.nix:
 * render it with `renderClusterNix`, evaluate the flake's pure Nix with a real
 * `nix-instantiate` (tests/nix_kit.ts): cluster.nix evaluates to its input,
 * flake.nix makes one configuration per node, every file parses, the example
 * cluster is what NICO renders, no secret reaches the store, and the files NICO
 * sends are found where each NIO generation writes them. Every node's role and
 * flags: flake_nodes_test.ts; the shell scripts: flake_scripts_test.ts.
 *
 * The Nix tests are ignored only when `nix-instantiate` is absent
 * (`bash scripts/install-nix.sh` installs it; CI does).
 *
 * @module
 */
import assert from "node:assert/strict";
import { renderClusterNix } from "../../core/render/clusternix.ts";
import { desiredConfigurations } from "../../core/render/desired.ts";
import { selectMachines } from "../../core/machines/selection.ts";
import { landsAt } from "../../testing/sim-nio/files.ts";
import { cluster, machine } from "../../testing/objects.ts";
import {
  FLAKE_DIR,
  ha,
  ipv6,
  NIX_VERSION,
  nixEval,
  nixEvalOk,
  nixHome,
  noNix,
  scratch,
  single,
  weird,
  writeCluster,
} from "../nix_kit.ts";

Deno.test({
  name: `cluster.nix rendered by NICO evaluates to exactly its input (${NIX_VERSION ?? "no Nix"})`,
  ignore: noNix,
  fn: async (t) => {
    for (
      const [label, c] of [["one control plane", single], ["three control plane and two workers", ha], [
        "values that need escaping",
        weird,
      ], ["IPv6", ipv6]] as const
    ) {
      await t.step(label, async () => {
        const value = await nixEvalOk("{ clusterFile }: import (/. + clusterFile)", {
          clusterFile: await writeCluster(c),
        });
        assert.deepStrictEqual(value, c);
      });
    }
  },
});

Deno.test({
  name: "flake.nix: one nixosConfiguration per node, wired to its machine, plus minimal",
  ignore: noNix,
  fn: async (t) => {
    // A stand-in nixpkgs whose nixosSystem returns its arguments: this checks the
    // flake's wiring, not NixOS itself (which needs nixpkgs and a store).
    const wiring = (dir: string) =>
      nixEval(
        `let
           flake = import ${dir}/flake.nix;
           out = flake.outputs { self = { }; nixpkgs = { lib.nixosSystem = args: args; }; };
           nico = cfg: map (m: m.nico) (builtins.filter (m: builtins.isAttrs m && m ? nico) cfg.modules);
         in builtins.mapAttrs (name: cfg: map (n: { inherit (n) machine cluster; source = n.secrets.source; }) (nico cfg))
           out.nixosConfigurations`,
      );
    const copyFlake = async () => {
      const dir = await Deno.makeTempDir({ dir: scratch });
      const cp = await new Deno.Command("cp", { args: ["-R", `${FLAKE_DIR}.`, dir] }).output();
      assert.ok(cp.success);
      return dir;
    };
    await t.step("with NICO's cluster.nix", async () => {
      const dir = await copyFlake();
      await Deno.writeTextFile(`${dir}/cluster.nix`, renderClusterNix(weird));
      const r = await wiring(dir);
      assert.ok(r.ok, r.stderr);
      const configs = r.value as Record<string, { machine: string; cluster: unknown; source: string }[]>;
      const names = [...weird.controlPlane, ...weird.workers].map((n) => n.name);
      assert.deepStrictEqual(Object.keys(configs).sort(), [...names, "minimal"].sort());
      for (const name of names) {
        assert.equal(configs[name]!.length, 1, name);
        assert.equal(configs[name]![0]!.machine, name);
        assert.deepStrictEqual(configs[name]![0]!.cluster, weird);
        assert.equal(configs[name]![0]!.source, "host", "secrets stay out of the store unless the user opts in");
      }
      assert.deepStrictEqual(configs.minimal, [], "#minimal is no cluster node");
    });
    await t.step("without cluster.nix (a plain clone) only minimal", async () => {
      const r = await wiring(await copyFlake());
      assert.ok(r.ok, r.stderr);
      assert.deepStrictEqual(Object.keys(r.value as object), ["minimal"]);
    });
  },
});

Deno.test({
  name: "every .nix file of the example flake parses (variables bound)",
  ignore: noNix,
  fn: async () => {
    const files: string[] = [];
    const walk = (dir: string) => {
      for (const e of Deno.readDirSync(dir)) {
        if (e.isDirectory) walk(`${dir}/${e.name}`);
        else if (e.name.endsWith(".nix")) files.push(`${dir}/${e.name}`);
      }
    };
    walk(FLAKE_DIR.replace(/\/$/, ""));
    const rel = files.map((f) => f.slice(FLAKE_DIR.length)).sort();
    for (const must of ["flake.nix", "lib/k3s-node.nix", "lib/members.nix", "modules/k3s.nix", "modules/minimal.nix"]) {
      assert.ok(rel.includes(must), `${must} is missing from ${rel.join(", ")}`);
    }
    for (const file of files) {
      const out = await new Deno.Command("nix-instantiate", {
        args: ["--store", "dummy://", "--option", "build-users-group", "", "--parse", file],
        clearEnv: true,
        env: {
          PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
          HOME: nixHome,
          NIX_CONF_DIR: `${nixHome}/conf`,
          NIX_PATH: "",
        },
        stdout: "null",
        stderr: "piped",
      }).output();
      assert.ok(out.success, `${file}: ${new TextDecoder().decode(out.stderr)}`);
    }
  },
});

Deno.test("cluster.example.nix is what NICO renders for the example cluster", async () => {
  const text = await Deno.readTextFile(`${FLAKE_DIR}cluster.example.nix`);
  // The example is documentation for real users: RFC 5737 addresses, never reached (only Nix-evaluated).
  const addr = (i: number) => `192.0.2.${i}`;
  assert.equal(
    text,
    renderClusterNix({
      name: "demo",
      namespace: "demo",
      endpoint: { host: addr(11), port: 6443 },
      bootstrapNode: "cp-01",
      controlPlane: [1, 2, 3].map((i) => ({ name: `cp-0${i}`, address: addr(10 + i) })),
      workers: [1, 2].map((i) => ({ name: `worker-0${i}`, address: addr(20 + i) })),
    }),
  );
});

Deno.test("the example flake never reads a secret file into the Nix store by itself", async () => {
  const offenders: string[] = [];
  const walk = async (dir: string) => {
    for await (const e of Deno.readDir(dir)) {
      const path = `${dir}/${e.name}`;
      if (e.isDirectory) await walk(path);
      else if (e.name.endsWith(".nix")) {
        const text = await Deno.readTextFile(path);
        if (/readFile/.test(text)) offenders.push(`${path}: builtins.readFile`);
        if (/\.\/(join-token|agent-token|cluster-ca\.(crt|key)|machine-ssh-key)\b/.test(text)) {
          offenders.push(`${path}: a path literal to a secret`);
        }
      }
    }
  };
  await walk(FLAKE_DIR.replace(/\/$/, ""));
  assert.deepStrictEqual(offenders, []);
});

Deno.test({
  name: "the flake finds the files NICO sends where each NIO generation writes them, with and without a subdir",
  ignore: noNix,
  fn: async (t) => {
    const c = cluster({ controlPlane: { machines: ["cp-1"] }, dataPlane: { machines: ["w-1"] } });
    const machines = [machine("cp-1"), machine("w-1")];
    const selection = selectMachines({ cluster: c, machines, configurations: [] });
    for (const nio of ["v1", "older"] as const) {
      for (const subdir of [undefined, "clusters/prod"]) {
        await t.step(`NIO ${nio}, ${subdir ? `configurationSubdir ${subdir}` : "flake at the root"}`, async () => {
          const spec = { ...c.spec, ...(subdir ? { configurationSubdir: subdir } : {}) };
          const [cfg] = desiredConfigurations({
            cluster: { ...c, spec },
            selection,
            machines,
            bootstrap: "cp-1",
            endpoint: { host: "127.0.0.1", port: 6443 },
            gitRepo: "https://git.example.test/flake.git",
            nio,
          });
          // A checkout of the repository with the flake in the subdir, and NICO's files where NIO writes them.
          const root = await Deno.makeTempDir({ dir: scratch });
          const flakeDir = subdir ? `${root}/${subdir}` : root;
          await Deno.mkdir(flakeDir, { recursive: true });
          assert.ok((await new Deno.Command("cp", { args: ["-R", `${FLAKE_DIR}.`, flakeDir] }).output()).success);
          for (const f of cfg!.spec.additionalFiles) {
            const at = `${root}/${landsAt(f.path, subdir, nio)}`;
            await Deno.mkdir(at.slice(0, at.lastIndexOf("/")), { recursive: true });
            await Deno.writeTextFile(at, f.valueType === "Inline" ? f.inline : "secret");
          }
          const r = await nixEval(
            `let out = (import ${flakeDir}/flake.nix).outputs { self = { }; nixpkgs = { lib.nixosSystem = a: a; }; };
             in builtins.attrNames out.nixosConfigurations`,
          );
          assert.ok(r.ok, r.stderr);
          assert.deepStrictEqual(r.value, ["cp-1", "minimal", "w-1"], "the flake did not find cluster.nix");
        });
      }
    }
  },
});
