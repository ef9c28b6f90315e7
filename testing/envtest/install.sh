#!/usr/bin/env bash
# Prints the folder holding kube-apiserver, etcd, kubectl and
# kube-controller-manager for NICO's tests.
#
# Order of preference:
#   1. $KUBEBUILDER_ASSETS, when it already holds the four binaries
#      (people with envtest binaries from setup-envtest need no Go);
#   2. the cache folder keyed by the versions pinned in go.mod;
#   3. a fresh build from the pinned Go module into that cache. A cache
#      filled before kube-controller-manager was needed gets just that one
#      binary added (same key: it comes from the same pinned module).
# Progress goes to stderr; stdout carries only the folder.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bins=(kube-apiserver etcd kubectl kube-controller-manager)

has_all() {
  local dir="$1" b
  for b in "${bins[@]}"; do [[ -x "$dir/$b" ]] || return 1; done
}

if [[ -n "${KUBEBUILDER_ASSETS:-}" ]] && has_all "$KUBEBUILDER_ASSETS"; then
  echo "$KUBEBUILDER_ASSETS"
  exit 0
fi

k8s_version="$(awk '$1 == "k8s.io/kubernetes" { print $2; exit }' "$here/go.mod")"
etcd_version="$(awk '$1 == "go.etcd.io/etcd/server/v3" { print $2; exit }' "$here/go.mod")"
cache_root="${NICO_ENVTEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nico/envtest}"
dest="$cache_root/k8s-${k8s_version}_etcd-${etcd_version}"

if has_all "$dest"; then
  echo "$dest"
  exit 0
fi

command -v go >/dev/null || {
  echo "install.sh: Go is needed to build the local control plane (or set KUBEBUILDER_ASSETS to a folder with kube-apiserver, etcd and kubectl)" >&2
  exit 1
}

# One build at a time: a second caller waits here, then finds the cache filled.
mkdir -p "$cache_root"
exec 9>"$cache_root/.lock"
flock 9
if has_all "$dest"; then
  echo "$dest"
  exit 0
fi

minor="${k8s_version#v1.}"; minor="${minor%%.*}"
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $pkg.gitVersion=$k8s_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
done

build() { # <output folder> <packages...>
  local out="$1"
  shift
  (cd "$here" && GOFLAGS="-mod=mod" CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$out/" "$@")
}

if [[ -x "$dest/kube-apiserver" && -x "$dest/etcd" && -x "$dest/kubectl" ]]; then
  echo "install.sh: adding kube-controller-manager ($k8s_version) to $dest" >&2
  work="$(mktemp -d "$cache_root/.build.XXXXXX")"
  trap 'rm -rf "$work"' EXIT
  build "$work" k8s.io/kubernetes/cmd/kube-controller-manager
  mv "$work/kube-controller-manager" "$dest/kube-controller-manager"
  has_all "$dest"
  echo "$dest"
  exit 0
fi

echo "install.sh: building kube-apiserver, kube-controller-manager, kubectl ($k8s_version) and etcd ($etcd_version) into $dest; this takes a while once" >&2
work="$(mktemp -d "$cache_root/.build.XXXXXX")"
trap 'rm -rf "$work"' EXIT
build "$work" \
  k8s.io/kubernetes/cmd/kube-apiserver \
  k8s.io/kubernetes/cmd/kube-controller-manager \
  k8s.io/kubernetes/cmd/kubectl \
  ./etcd
has_all "$work"
rm -rf "$dest"
mv "$work" "$dest"
trap - EXIT
echo "$dest"
