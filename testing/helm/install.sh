#!/usr/bin/env bash
# Prints the path of the helm binary NICO's chart tests run.
#
# Order of preference:
#   1. $NICO_HELM, when it names an executable (bring your own helm);
#   2. the cache folder keyed by the helm version pinned in go.mod;
#   3. a fresh build from the pinned Go module into that cache.
# Progress goes to stderr; stdout carries only the path.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$here/../gobuild.sh"

own_binary "${NICO_HELM:-}"

version="$(pinned_version helm.sh/helm/v4 "$here/go.mod")"
cache_root="${NICO_HELM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nico/helm}"
cd "$here"
cached_build "$cache_root/helm-${version}" helm "helm $version (or set NICO_HELM to a helm binary)" \
  -ldflags "-s -w -X helm.sh/helm/v4/internal/version.version=$version" helm.sh/helm/v4/cmd/helm
