# The shell scripts of a node's k3s unit, as text. Pure: the NixOS module
# wraps them with pkgs.writeShellScript; tests run them with bash against
# temporary folders.
#
#   import ./k3s-scripts.nix { node = import ./k3s-node.nix { ... }; k3s = "${pkgs.k3s}/bin/k3s"; }
#   => { prepare; start; report; }
#
# prepare (ExecStartPre) checks that the join tokens are in place and, on the
# bootstrap node, puts NICO's CA where k3s looks for its server and client
# CAs, so k3s uses it instead of creating its own. It never overwrites a CA
# file that exists: k3s keeps the CA it first started with.
# start (ExecStart) runs k3s with the node's flags, unchanged.
# report tells NICO which configuration this node runs (the flake contract):
# it annotates the node's own Node with cluster.nix's `configuration`, with
# the kubelet's credentials (a node may annotate itself), once k3s is up.
{ node, k3s ? "k3s", configuration ? null, kubeconfig ? "/var/lib/rancher/k3s/agent/kubelet.kubeconfig" }:
let
  sh = import ./shell.nix;
  inherit (builtins) concatStringsSep map;

  calls = fn: concatStringsSep "\n" (map (f: "${fn} ${sh.args [ f.source f.target f.mode ]}") node.caFiles);

  # Every source is checked before anything is placed, so a missing key never
  # leaves its certificate placed alone.
  caScript = ''
    # check_ca / place_ca SOURCE TARGET MODE
    missing=0
    check_ca() {
      if [ ! -e "$2" ] && [ ! -s "$1" ]; then
        echo "k3s: NICO's CA file $1 is missing or empty; the bootstrap node needs it before k3s first starts." >&2
        missing=1
      fi
    }
    place_ca() {
      if [ -e "$2" ]; then
        if [ -s "$1" ] && ! cmp -s "$1" "$2"; then
          echo "k3s: warning: $2 differs from NICO's CA file $1: this cluster was initialized with another CA, so NICO's kubeconfig will not be trusted. Left as it is." >&2
        fi
        return 0
      fi
      dir=$(dirname "$2")
      [ -d "$dir" ] || install -d -m 0700 "$dir"
      install -m "$3" "$1" "$2.nico-tmp"
      mv -f "$2.nico-tmp" "$2"
    }
    ${calls "check_ca"}
    [ "$missing" = 0 ] || exit 1
    ${calls "place_ca"}
  '';
in
{
  start = ''
    set -eu
    exec ${sh.arg k3s} ${sh.args node.flags}
  '';

  report = if configuration == null then null else ''
    set -eu
    exec ${sh.arg k3s} kubectl --kubeconfig ${sh.arg kubeconfig} annotate --overwrite node ${sh.arg node.name} ${
      sh.arg "nico.homystack.com/configuration=${configuration}"
    }
  '';

  prepare = ''
    set -eu
    for token in ${sh.args node.tokenFiles}; do
      if [ ! -s "$token" ]; then
        echo "k3s: the join token is missing or empty at $token." >&2
        echo "k3s: NICO hands it to NIO as the file of that name (join-token on control-plane nodes, agent-token on every node); the example flake's README (Secrets) says how it reaches this host." >&2
        exit 1
      fi
    done
    ${if node.caFiles == [ ] then "" else caScript}
  '';
}
