#!/usr/bin/env bash
# Prints a folder holding the CRDs of the Flux controllers pinned in go.mod
# (kustomize-controller's Kustomization, helm-controller's HelmRelease), as each
# module ships them in config/crd/bases/. Nothing is compiled: `go mod download`
# fetches each module from the Go module proxy, checks it against go.sum, and
# the CRD files are copied into a cache folder keyed by go.mod and go.sum.
# Progress goes to stderr; stdout carries only the path.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
key="$(cat "$here/go.mod" "$here/go.sum" | sha256sum | cut -c1-16)"
cache_root="${NICO_FLUX_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nico/flux}"
dest="$cache_root/crds-$key"
if [[ -d "$dest" ]]; then
  echo "$dest"
  exit 0
fi
command -v go >/dev/null || { echo "install.sh: Go is needed to fetch Flux's CRDs" >&2; exit 1; }
mkdir -p "$cache_root"
exec 9>"$cache_root/.lock"
flock 9
if [[ -d "$dest" ]]; then
  echo "$dest"
  exit 0
fi
echo "install.sh: fetching the Flux CRDs pinned in $here/go.mod into $dest" >&2
work="$(mktemp -d "$cache_root/.fetch.XXXXXX")"
# shellcheck disable=SC2064 # the folder is known now
trap "rm -rf '$work'" EXIT
cd "$here"
# Each `require` line of go.mod: module and version.
awk '/^require \($/ { inside = 1; next } inside && /^\)/ { inside = 0 } inside && NF >= 2 { print $1, $2 }
  /^require [^(]/ { print $2, $3 }' go.mod |
  while read -r module version; do
    dir="$(GOFLAGS=-mod=mod go mod download -json "$module@$version" |
      sed -nE 's/^[[:space:]]*"Dir": "(.*)",?$/\1/p')"
    [[ -n "$dir" && -d "$dir/config/crd/bases" ]] || { echo "install.sh: $module@$version has no config/crd/bases" >&2; exit 1; }
    cp "$dir"/config/crd/bases/*.yaml "$work/"
  done
ls "$work"/*.yaml >/dev/null
rm -rf "$dest"
mv "$work" "$dest"
trap - EXIT
echo "$dest"
