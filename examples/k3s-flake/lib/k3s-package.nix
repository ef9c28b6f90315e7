# Which k3s package a node runs: the one cluster.nix's kubernetesVersion asks
# for (NICO's spec.version, "1.31" or "1.31.4"), from nixpkgs' k3s_1_XX
# packages; without one, nixpkgs' default k3s (the version then moves with
# flake.lock, and NICO's skew guard watches it). A version this nixpkgs has
# no package for fails the evaluation with a message that says what it has.
# Pure: `pkgs` is any attribute set with `k3s` and `k3s_1_XX` packages, each
# with a `version` such as "1.31.4+k3s1" (the tests pass a fake one).
{ cluster, pkgs }:
let
  asked = cluster.kubernetesVersion or null;
  parts = if asked == null then null else builtins.match "v?1\\.([0-9]+)(\\.([0-9]+))?" asked;
  minor = builtins.elemAt parts 0;
  patch = builtins.elemAt parts 2;
  name = "k3s_1_${minor}";
  # Only for the messages (lazy): the k3s_1_XX packages this nixpkgs has.
  available = builtins.concatStringsSep ", "
    (builtins.filter (n: builtins.match "k3s_1_[0-9]+" n != null) (builtins.attrNames pkgs));
  pkg = pkgs.${name} or null;
  pkgPatch = builtins.elemAt (builtins.match "v?1\\.[0-9]+\\.([0-9]+).*" pkg.version) 0;
in
if asked == null then pkgs.k3s
else if parts == null then
  throw "nico: cluster.nix asks for Kubernetes ${asked} (kubernetesVersion), which is no version such as 1.31 or 1.31.4"
else if pkg == null then
  throw ("nico: cluster.nix asks for Kubernetes ${asked} (spec.version), but this nixpkgs has no ${name} "
    + "(it has: ${available}); set spec.version to a version it has, or pin a nixpkgs that has ${name} in flake.lock")
else if patch != null && pkgPatch != patch then
  throw ("nico: cluster.nix asks for Kubernetes ${asked} (spec.version), but ${name} in this nixpkgs is "
    + "${pkg.version}; set spec.version to 1.${minor} (any patch) or 1.${minor}.${pkgPatch}, or pin a nixpkgs whose "
    + "${name} is ${asked} in flake.lock")
else pkg
