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

if [[ -n "${NICO_HELM:-}" && -x "${NICO_HELM}" ]]; then
  echo "$NICO_HELM"
  exit 0
fi

version="$(awk '($1 == "helm.sh/helm/v4") { print $2; exit } ($1 == "require" && $2 == "helm.sh/helm/v4") { print $3; exit }' "$here/go.mod")"
[[ -n "$version" ]] || { echo "install.sh: no helm.sh/helm/v4 version in $here/go.mod" >&2; exit 1; }
cache_root="${NICO_HELM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nico/helm}"
dest="$cache_root/helm-${version}"

if [[ -x "$dest/helm" ]]; then
  echo "$dest/helm"
  exit 0
fi

command -v go >/dev/null || {
  echo "install.sh: Go is needed to build helm (or set NICO_HELM to a helm binary)" >&2
  exit 1
}

# One build at a time: a second caller waits here, then finds the cache filled.
mkdir -p "$cache_root"
exec 9>"$cache_root/.lock"
flock 9
if [[ -x "$dest/helm" ]]; then
  echo "$dest/helm"
  exit 0
fi

echo "install.sh: building helm $version into $dest; this takes a minute or two once" >&2
work="$(mktemp -d "$cache_root/.build.XXXXXX")"
trap 'rm -rf "$work"' EXIT

cd "$here"
GOFLAGS="-mod=mod" CGO_ENABLED=0 go build -trimpath \
  -ldflags "-s -w -X helm.sh/helm/v4/internal/version.version=$version" \
  -o "$work/helm" helm.sh/helm/v4/cmd/helm
[[ -x "$work/helm" ]]
rm -rf "$dest"
mv "$work" "$dest"
trap - EXIT
echo "$dest/helm"
