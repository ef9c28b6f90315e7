#!/usr/bin/env bash
# Prints the path of gitops-check, the program NICO's tests use to read a
# KubernetesCluster the way GitOps tools do (kstatus, Flux's CEL health
# checks, Argo CD's Lua health checks); see main.go.
#
# Order of preference:
#   1. the cache folder keyed by the program and its pinned modules
#      (a hash of go.mod, go.sum and main.go);
#   2. a fresh build into that cache.
# Progress goes to stderr; stdout carries only the path.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
key="$(cat "$here/go.mod" "$here/go.sum" "$here/main.go" | sha256sum | cut -c1-16)"
cache_root="${NICO_GITOPS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nico/gitops}"
dest="$cache_root/gitops-check-$key"

if [[ -x "$dest/gitops-check" ]]; then
  echo "$dest/gitops-check"
  exit 0
fi

command -v go >/dev/null || {
  echo "install.sh: Go is needed to build gitops-check (kstatus, cel-go and gopher-lua from testing/gitops/go.mod)" >&2
  exit 1
}

# One build at a time: a second caller waits here, then finds the cache filled.
mkdir -p "$cache_root"
exec 9>"$cache_root/.lock"
flock 9
if [[ -x "$dest/gitops-check" ]]; then
  echo "$dest/gitops-check"
  exit 0
fi

echo "install.sh: building gitops-check into $dest; this takes a minute once" >&2
work="$(mktemp -d "$cache_root/.build.XXXXXX")"
trap 'rm -rf "$work"' EXIT

cd "$here"
GOFLAGS="-mod=mod" CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$work/gitops-check" .
[[ -x "$work/gitops-check" ]]
rm -rf "$dest"
mv "$work" "$dest"
trap - EXIT
echo "$dest/gitops-check"
