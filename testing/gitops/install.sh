#!/usr/bin/env bash
# Prints the path of gitops-check, the program NICO's tests use to read a
# KubernetesCluster the way GitOps tools do (kstatus, Flux's CEL health
# checks, Argo CD's Lua health checks); see main.go. Built once into a cache
# folder keyed by the program and its pinned modules (a hash of go.mod,
# go.sum and main.go). Progress goes to stderr; stdout carries only the path.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$here/../gobuild.sh"
key="$(cat "$here/go.mod" "$here/go.sum" "$here/main.go" | sha256sum | cut -c1-16)"
cache_root="${NICO_GITOPS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nico/gitops}"
cd "$here"
cached_build "$cache_root/gitops-check-$key" gitops-check \
  "gitops-check (kstatus, cel-go and gopher-lua from testing/gitops/go.mod)" -ldflags "-s -w" .
