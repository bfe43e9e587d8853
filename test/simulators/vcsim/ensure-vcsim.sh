#!/usr/bin/env bash
# Builds the test vcsim (this directory's Go main over govmomi's simulator engine) unless the cache
# already holds the build for these exact inputs, and prints the binary's path as its last line.
# Keyed by go.sum (the pinned govmomi) and the main's own sources, so a change to either rebuilds and
# a second run reuses. Safe to run twice and concurrently (flock). No VCS stamping: a checkout owned by
# another user would make Go refuse to build. Needs Go; the first build fetches the
# pinned modules through the Go proxy unless they are in the module cache.
# env: HCP_VCSIM_CACHE (default /var/cache/hcp-vcsim when writable, else ~/.cache/hcp-vcsim)
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
if [[ -n "${HCP_VCSIM_CACHE:-}" ]]; then
  CACHE="$HCP_VCSIM_CACHE"
elif mkdir -p /var/cache/hcp-vcsim 2>/dev/null && [[ -w /var/cache/hcp-vcsim ]]; then
  CACHE=/var/cache/hcp-vcsim
else
  CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/hcp-vcsim"
fi
mkdir -p "$CACHE"
KEY="$(cd "$HERE" && cat go.sum go.mod $(ls *.go | sort) | sha256sum | cut -c1-16)"
BIN="$CACHE/$KEY/vcsim"
if [[ ! -x "$BIN" ]]; then
  exec 9>"$CACHE/build.lock"
  flock 9
  if [[ ! -x "$BIN" ]]; then
    mkdir -p "$CACHE/$KEY"
    (cd "$HERE" && go build -trimpath -buildvcs=false -o "$BIN.part" .) >&2
    mv "$BIN.part" "$BIN"
  fi
fi
echo "$BIN"
