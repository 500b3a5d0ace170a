#!/usr/bin/env bash
# Build (once) and cache the versitygw S3 gateway (Apache-2.0, Go module
# github.com/versity/versitygw), print the path of its binary.
#
# `go install github.com/versity/versitygw/cmd/versitygw@$VERSITYGW_VERSION` through the Go
# module proxy, with GOPATH, GOMODCACHE, GOCACHE and GOBIN all under
# $FRAGSTATE_CACHE/go (default .cache/ in the repo); the machine's own Go toolchain
# (GOTOOLCHAIN=local: no toolchain download).
set -euo pipefail
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

gobase="$FRAGSTATE_CACHE/go"
bindir="$gobase/bin/versitygw-$VERSITYGW_VERSION"
bin="$bindir/versitygw"
if [ -x "$bin" ] && [ -f "$bindir/.complete" ]; then
  echo "$bin"
  exit 0
fi
need go "the Go toolchain is needed to build versitygw $VERSITYGW_VERSION from the Go module proxy"

mkdir -p "$gobase" "$bindir" || die "cannot create $gobase"
export GOPATH="$gobase/path" GOMODCACHE="$gobase/mod" GOCACHE="$gobase/build-cache" GOBIN="$bindir"
export GOTOOLCHAIN=local GOFLAGS=-modcacherw CGO_ENABLED=0
log "building github.com/versity/versitygw/cmd/versitygw@$VERSITYGW_VERSION with $(go version | awk '{print $3}') (go install through the Go module proxy)"
if ! go install "github.com/versity/versitygw/cmd/versitygw@$VERSITYGW_VERSION" >"$gobase/versitygw-build.log" 2>&1; then
  tail -n 30 "$gobase/versitygw-build.log" >&2
  die "could not fetch or build github.com/versity/versitygw/cmd/versitygw@$VERSITYGW_VERSION (go install failed, log $gobase/versitygw-build.log; is the Go module proxy reachable?)"
fi
[ -x "$bin" ] || die "go install of versitygw $VERSITYGW_VERSION left no binary at $bin"
touch "$bindir/.complete"
log "versitygw $VERSITYGW_VERSION built at $bin"
echo "$bin"
