/**
 * Where NIO writes a configuration's files, and whether a flake in
 * `configurationSubdir` that imports `./cluster.nix` (as the example flake
 * does) finds it there.
 *
 * @module
 */
import type { NioGeneration, NixosConfigurationSpec } from "../../core/contract/nio.ts";
import type { SimContext } from "./context.ts";

/** Where a file of `additionalFiles` lands, relative to the checkout's root. */
export function landsAt(path: string, subdir: string | undefined, generation: NioGeneration): string {
  const clean = (p: string) => p.split("/").filter((x) => x !== "" && x !== ".").join("/");
  // v1 copies files into the root of its checkout (and builds in the subdir); the older NIO into the subdir.
  return generation === "v1" || !subdir ? clean(path) : clean(`${subdir}/${path}`);
}

/**
 * Why a switch of this spec fails because the flake cannot find `cluster.nix`
 * (the example flake then has no attribute for the node), or undefined.
 */
export function flakeFilesProblem(
  ctx: SimContext,
  spec: NixosConfigurationSpec,
  generation: NioGeneration,
): string | undefined {
  if (ctx.opts.requireFlakeFiles === false) return undefined;
  const files = (spec.additionalFiles ?? []).map((f) => landsAt(f.path, spec.configurationSubdir, generation));
  if (!files.some((f) => f === "cluster.nix" || f.endsWith("/cluster.nix"))) return undefined;
  const want = landsAt("cluster.nix", spec.configurationSubdir, "older");
  if (files.includes(want)) return undefined;
  const attr = (spec.flake ?? "#").slice(1);
  return `error: flake '.' does not provide attribute 'nixosConfigurations.${attr}' ` +
    `(no ./cluster.nix beside flake.nix in ${spec.configurationSubdir || "the repository root"}; it is at ${
      files.find((f) => f.endsWith("cluster.nix"))
    })`;
}
