#!/usr/bin/env bash
# Installs Nix's command-line tools (nix-instantiate and friends) from Debian's
# packages, for tests/integration/flake_test.ts, which evaluates the example flake's pure
# Nix code. Idempotent: does nothing when nix-instantiate is already on PATH.
# Needs root (or sudo) and apt; it does not start a Nix daemon, and the tests
# need none: they evaluate with `--store dummy://`, so no /nix is made.
set -euo pipefail

if command -v nix-instantiate >/dev/null 2>&1; then
  echo "install-nix.sh: $(nix-instantiate --version) already installed" >&2
  exit 0
fi

command -v apt-get >/dev/null 2>&1 || {
  echo "install-nix.sh: apt-get not found; install Nix another way (nix-instantiate must be on PATH)" >&2
  exit 1
}

sudo=""
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null 2>&1 || {
    echo "install-nix.sh: must run as root (or with sudo available) to install nix-bin" >&2
    exit 1
  }
  sudo="sudo"
fi

export DEBIAN_FRONTEND=noninteractive
install_nix() { $sudo apt-get install -y -qq --no-install-recommends nix-bin >&2; }
# Refresh the package lists first when apt does not know nix-bin yet, and
# once more if the install fails (stale lists point at removed versions).
if ! apt-cache show nix-bin >/dev/null 2>&1; then
  $sudo apt-get update -qq >&2
fi
if ! install_nix; then
  $sudo apt-get update -qq >&2
  install_nix
fi

command -v nix-instantiate >/dev/null 2>&1 || {
  echo "install-nix.sh: nix-bin installed but nix-instantiate is not on PATH" >&2
  exit 1
}
echo "install-nix.sh: installed $(nix-instantiate --version)" >&2
