#!/usr/bin/env bash
# Prints the path of apiserver-front, the simulated control-plane node's API
# server front (see main.go: /version as the node runs it, everything else
# passed to the simulated cluster's real kube-apiserver). Go's standard
# library only. Built once into a cache folder keyed by a hash of go.mod and
# main.go. Progress goes to stderr; stdout carries only the path.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$here/../gobuild.sh"
key="$(cat "$here/go.mod" "$here/main.go" | sha256sum | cut -c1-16)"
cache_root="${NICO_FRONT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nico/front}"
cd "$here"
cached_build "$cache_root/apiserver-front-$key" apiserver-front "apiserver-front (testing/front/main.go)" \
  -ldflags "-s -w" .
