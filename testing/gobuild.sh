#!/usr/bin/env bash
# Sourced by the install.sh of each tool the tests build from Go (helm,
# gitops-check, apiserver-front, promtool): one way to build a binary once
# into a cache folder outside the repository.
#
#   cached_build <folder> <binary> <what, for the progress line> <go build flags...> <package>
#
# Prints <folder>/<binary> when it is there already; otherwise builds it with
# `go build <flags> -o <work>/<binary> <package>` (run from the caller's folder, its
# go.mod pinning what is built), one build at a time (a second caller waits
# on a lock, then finds the binary), moves the result into place and prints
# its path. Progress goes to stderr; stdout carries only the path.
#
#   own_binary <path>          prints <path> and exits the caller when it names an executable (bring your own)
#   pinned_version <module> <go.mod>   prints the version <go.mod> pins for <module>, or fails naming them

cached_build() {
  local dest="$1" binary="$2" what="$3"
  shift 3
  if [[ -x "$dest/$binary" ]]; then
    echo "$dest/$binary"
    return 0
  fi
  command -v go >/dev/null || {
    echo "install.sh: Go is needed to build $what" >&2
    return 1
  }
  local root
  root="$(dirname "$dest")"
  mkdir -p "$root"
  exec 9>"$root/.lock"
  flock 9
  if [[ -x "$dest/$binary" ]]; then
    echo "$dest/$binary"
    return 0
  fi
  echo "install.sh: building $what into $dest; this takes a minute or two once" >&2
  local work
  work="$(mktemp -d "$root/.build.XXXXXX")"
  # shellcheck disable=SC2064 # the folder is known now
  trap "rm -rf '$work'" EXIT
  local package="${*: -1}"
  GOFLAGS="-mod=mod" CGO_ENABLED=0 go build -trimpath "${@:1:$#-1}" -o "$work/$binary" "$package"
  [[ -x "$work/$binary" ]]
  rm -rf "$dest"
  mv "$work" "$dest"
  trap - EXIT
  echo "$dest/$binary"
}

own_binary() {
  if [[ -n "${1:-}" && -x "$1" ]]; then
    echo "$1"
    exit 0
  fi
}

pinned_version() {
  local module="$1" gomod="$2" version
  version="$(awk -v m="$module" '($1 == m) { print $2; exit } ($1 == "require" && $2 == m) { print $3; exit }' "$gomod")"
  [[ -n "$version" ]] || {
    echo "install.sh: no $module version in $gomod" >&2
    return 1
  }
  echo "$version"
}
