# A node's part in a restore of etcd, for k3s: cluster.nix's `restore`
# (docs/cluster-nix.md#restore) turned into the script of a oneshot unit that
# runs before k3s. Pure: builtins only; tests evaluate it with nix-instantiate
# and run the script with bash.
#
#   import ./k3s-restore.nix { cluster = import ./cluster.nix; node = import ./k3s-node.nix { ... }; }
#   => { part = null | "restore" | "rejoin"; id = null | "<request id>"; script = null | "<bash>"; }
#
# restore (the bootstrap node): download the backup from the presigned URL in
#   the file etcd-restore-url (a run-time path, never read by Nix), check the
#   SHA-256 of its database (all but its last 32 bytes, where etcd put that
#   same hash) against cluster.nix, and only then run
#   `k3s server --cluster-reset --cluster-reset-restore-path=<file>`: k3s moves
#   its old etcd data aside and starts a cluster of one from the snapshot, then
#   exits; the k3s unit then starts as usual. A failed download (an expired URL
#   answers 403) or a wrong hash fails the unit before anything is touched.
# rejoin (the other control-plane nodes, one at a time): remove k3s's old etcd
#   data (server/db), so k3s joins the restored cluster as a new member.
# Each runs once per request id (a marker file in k3s's data dir).
{ cluster, node, k3s ? "k3s", urlFile ? "/var/lib/nico/etcd-restore-url", curl ? "curl" }:
let
  sh = import ./shell.nix;
  inherit (builtins) filter match;

  r = cluster.restore or null;
  part = if r == null || !node.controlPlane then null else r.role;
  server = "${node.dataDir}/server";
  marker = "${server}/nico-restore-${r.id}.done";
  work = "${server}/nico-restore-${r.id}";

  # The node's own server flags, but the ones that say how to start (init, join): cluster-reset takes the rest
  # (token, node name, data dir, addresses) as they are.
  resetFlags = filter (f: f != "server" && f != "--cluster-init" && match "--server=.*" f == null) node.flags;

  once = ''
    set -eu
    marker=${sh.arg marker}
    if [ -e "$marker" ]; then
      echo "nico-restore: ${part} of request ${r.id} already done on this node" >&2
      exit 0
    fi
  '';

  restore = once + ''
    url_file=${sh.arg urlFile}
    if [ ! -s "$url_file" ]; then
      echo "nico-restore: the backup's URL is missing at $url_file (NICO sends it as etcd-restore-url to the bootstrap node during a restore)." >&2
      exit 1
    fi
    work=${sh.arg work}
    rm -rf "$work"
    install -d -m 0700 "$work"
    if ! ${sh.arg curl} --fail --silent --show-error --location --output "$work/snapshot.db" "$(cat "$url_file")"; then
      rm -rf "$work"
      echo "nico-restore: could not download backup ${r.backup} (an expired URL answers 403: ask NICO for a new restore); nothing was restored." >&2
      exit 1
    fi
    # The object is etcd's snapshot: the database, then its 32-byte SHA-256; cluster.nix names the database's.
    got=$(head -c -32 "$work/snapshot.db" | sha256sum | cut -d' ' -f1)
    if [ "$got" != ${sh.arg r.sha256} ]; then
      rm -rf "$work"
      echo "nico-restore: sha256 mismatch for backup ${r.backup}: expected ${r.sha256}, got $got; nothing was restored." >&2
      exit 1
    fi
    ${sh.arg k3s} server --cluster-reset --cluster-reset-restore-path="$work/snapshot.db" ${sh.args resetFlags}
    rm -rf "$work"
    touch "$marker"
  '';

  rejoin = once + ''
    rm -rf ${sh.arg "${server}/db"}
    install -d -m 0700 ${sh.arg server}
    touch "$marker"
  '';
in
{
  inherit part;
  id = if part == null then null else r.id;
  script = if part == "restore" then restore else if part == "rejoin" then rejoin else null;
}
