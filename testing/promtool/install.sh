#!/usr/bin/env bash
# Prints the path of the promtool binary NICO's monitoring tests run
# (`promtool check rules`, `promtool test rules`).
#
# Order of preference:
#   1. $NICO_PROMTOOL, when it names an executable (bring your own promtool);
#   2. the cache folder keyed by the Prometheus version pinned in go.mod;
#   3. a fresh build from the pinned Go module into that cache.
# Progress goes to stderr; stdout carries only the path.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$here/../gobuild.sh"

own_binary "${NICO_PROMTOOL:-}"

module=github.com/prometheus/prometheus
version="$(pinned_version "$module" "$here/go.mod")"
cache_root="${NICO_PROMTOOL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nico/promtool}"
cd "$here"
cached_build "$cache_root/promtool-${version}" promtool "promtool $version (or set NICO_PROMTOOL to a promtool binary)" \
  -ldflags "-s -w -X github.com/prometheus/common/version.Version=${version#v}" "$module/cmd/promtool"
