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

if [[ -n "${NICO_PROMTOOL:-}" && -x "${NICO_PROMTOOL}" ]]; then
  echo "$NICO_PROMTOOL"
  exit 0
fi

module=github.com/prometheus/prometheus
version="$(awk -v m="$module" '($1 == m) { print $2; exit } ($1 == "require" && $2 == m) { print $3; exit }' "$here/go.mod")"
[[ -n "$version" ]] || { echo "install.sh: no $module version in $here/go.mod" >&2; exit 1; }
cache_root="${NICO_PROMTOOL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nico/promtool}"
cd "$here"
cached_build "$cache_root/promtool-${version}" promtool "promtool $version (or set NICO_PROMTOOL to a promtool binary)" \
  -ldflags "-s -w -X github.com/prometheus/common/version.Version=${version#v}" "$module/cmd/promtool"
