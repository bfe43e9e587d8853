#!/usr/bin/env bash
# Makes the libvirt test guest ready: builds it (build-guest.sh) unless the cache holds this version,
# creates and starts the test pool, uploads the base images as volumes named by version. Run under
# flock (the test helper does): test files in parallel share one build. Prints `POOL IMAGE DEAF_IMAGE`.
# Usage: ensure-guest.sh [URI]   env: HCP_TEST_GUEST_CACHE (default /var/cache/hcp-test-guest)
set -euo pipefail
URI="${1:-qemu:///system}"
HERE="$(cd "$(dirname "$0")" && pwd)"
CACHE="${HCP_TEST_GUEST_CACHE:-/var/cache/hcp-test-guest}"
POOL="${HCP_TEST_POOL:-hcp-test}"
V=(virsh -c "$URI" -q)

kernel_package() { apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/{print $2; exit}'; }
KPKG="$(kernel_package)"
# A machine whose package lists were cleaned (container images) knows no kernel package until updated.
if [[ -z "$KPKG" ]]; then apt-get update -qq >&2; KPKG="$(kernel_package)"; fi
KEY="$( (cat "$HERE/build-guest.sh" "$HERE/init"; echo "$KPKG"; dpkg-query -W busybox-static syslinux) | sha256sum | cut -c1-12)"
BUILD="$CACHE/$KEY"
if [[ ! -f "$BUILD/hcp-test-guest-deaf.qcow2" ]]; then
  mkdir -p "$CACHE"
  "$HERE/build-guest.sh" "$CACHE/deb" >&2
  mkdir -p "$BUILD.tmp" && mv "$CACHE/deb"/*.qcow2 "$BUILD.tmp/" && rm -rf "$BUILD" && mv "$BUILD.tmp" "$BUILD"
fi

if ! "${V[@]}" pool-info "$POOL" >/dev/null 2>&1; then
  mkdir -p "$CACHE/pool"
  "${V[@]}" pool-define-as "$POOL" dir --target "$CACHE/pool" >/dev/null
  "${V[@]}" pool-build "$POOL" >/dev/null
fi
# Not `| grep -q`: with pipefail, virsh's SIGPIPE would fail the test on a running pool.
[[ "$("${V[@]}" pool-info "$POOL")" =~ State:\ +running ]] || "${V[@]}" pool-start "$POOL" >/dev/null

upload() { # file in BUILD, volume name
  if ! "${V[@]}" vol-info --pool "$POOL" "$2" >/dev/null 2>&1; then
    "${V[@]}" vol-create-as "$POOL" "$2.part" "$(stat -c %s "$BUILD/$1")" --format raw >/dev/null
    "${V[@]}" vol-upload --pool "$POOL" "$2.part" "$BUILD/$1"
    # Named for its version only once complete: a volume under that name is always whole.
    "${V[@]}" vol-clone --pool "$POOL" "$2.part" "$2" >/dev/null
    "${V[@]}" vol-delete --pool "$POOL" "$2.part" >/dev/null
  fi
}
upload hcp-test-guest.qcow2 "hcp-test-guest-$KEY.qcow2"
upload hcp-test-guest-deaf.qcow2 "hcp-test-guest-deaf-$KEY.qcow2"
echo "$POOL hcp-test-guest-$KEY.qcow2 hcp-test-guest-deaf-$KEY.qcow2"
