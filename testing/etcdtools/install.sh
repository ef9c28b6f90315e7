#!/usr/bin/env bash
# Prints the path of etcdutl (default) or etcdctl, as the first argument
# asks: the backup tests judge every object they make with
# `etcdutl snapshot status`; the backup benchmark runs
# `etcdctl snapshot save` beside NICO.
#
# Order of preference:
#   1. $NICO_ETCDUTL / $NICO_ETCDCTL, when it names an executable;
#   2. the cache folder keyed by the etcd version pinned in go.mod;
#   3. a fresh build from the pinned Go module into that cache.
# The version must be testing/envtest/go.mod's etcd: the tools judge that
# etcd's snapshots. Progress goes to stderr; stdout carries only the path.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$here/../gobuild.sh"

tool="${1:-etcdutl}"
case "$tool" in
  etcdutl) own="${NICO_ETCDUTL:-}" ;;
  etcdctl) own="${NICO_ETCDCTL:-}" ;;
  *) echo "install.sh: etcdutl or etcdctl, not $tool" >&2; exit 2 ;;
esac
own_binary "$own"

module="go.etcd.io/etcd/$tool/v3"
version="$(pinned_version "$module" "$here/go.mod")"
server="$(awk '$1 == "go.etcd.io/etcd/server/v3" { print $2; exit }' "$here/../envtest/go.mod")"
[[ "$version" == "$server" ]] || {
  echo "install.sh: $tool $version here, etcd $server in testing/envtest/go.mod: pin the same version" >&2
  exit 1
}
cache_root="${NICO_ETCDTOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nico/etcdtools}"
cd "$here"
cached_build "$cache_root/$tool-${version}" "$tool" "$tool $version (or set NICO_$(tr a-z A-Z <<<"$tool") to one)" \
  -ldflags "-s -w" "$module"
