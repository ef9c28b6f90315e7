#!/usr/bin/env bash
# Prints the path of versitygw, the S3-compatible object store (Apache-2.0,
# its posix backend) NICO's backup tests and benchmark run against.
#
# Order of preference:
#   1. $NICO_VERSITYGW, when it names an executable (bring your own);
#   2. the cache folder keyed by the versitygw version pinned in go.mod;
#   3. a fresh build from the pinned Go module into that cache.
# Progress goes to stderr; stdout carries only the path.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$here/../gobuild.sh"

own_binary "${NICO_VERSITYGW:-}"

module=github.com/versity/versitygw
version="$(pinned_version "$module" "$here/go.mod")"
cache_root="${NICO_S3_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nico/s3}"
cd "$here"
cached_build "$cache_root/versitygw-${version}" versitygw "versitygw $version (or set NICO_VERSITYGW to a versitygw binary)" \
  -ldflags "-s -w -X main.Version=${version}" "$module/cmd/versitygw"
