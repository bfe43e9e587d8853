#!/usr/bin/env bash
# OpenTofu (the `tofu` CLI) for the Terraform provider's acceptance tests (terraform-provider-hcp/,
# test/e2e/terraform-provider.e2e.ts), built from the Go module proxy: no release tarball or provider
# registry is reachable here.
#
#   bash .ci/opentofu.sh
#
# `go install` refuses OpenTofu's module (its go.mod has replace directives), so the module is downloaded
# into the normal Go module cache (`go mod download`), copied to a writable folder and built there with
# `go build ./cmd/tofu` (about 4 minutes of two cores the first time), with the version package's dev flag
# off as OpenTofu's release build has it (`tofu version` then says v1.10.10, not v1.10.10-dev). The binary
# is kept in /var/cache/hcp-opentofu/<version>/tofu and reused when it answers that version, so the script
# is safe to run twice. The provider is then built and vetted (go build ./... and go vet in
# terraform-provider-hcp/) so a compile error shows here rather than inside a test.
#
# Environment (all optional):
#   HCP_TOFU_VERSION   OpenTofu version from the Go module proxy   (1.10.10)
#   HCP_TOFU_HOME      cache for the built binary                  (/var/cache/hcp-opentofu)
#
# Prints HCP_TOFU_BIN=<path of tofu> on its last line, for .ci/run to export.
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION="${HCP_TOFU_VERSION:-1.10.10}"
HOME_DIR="${HCP_TOFU_HOME:-/var/cache/hcp-opentofu}"
BIN="$HOME_DIR/$VERSION/tofu"

say() { echo "opentofu.sh: $*" >&2; }
die() { say "$*"; exit 1; }

command -v go >/dev/null 2>&1 || export PATH="$PATH:/usr/local/go/bin"
command -v go >/dev/null 2>&1 || die "Go is needed to build OpenTofu and the provider"

# A binary that answers with exactly this version (not a -dev build of it) is the one to keep.
built() { [[ -x "$BIN" ]] && [[ "$("$BIN" version 2>/dev/null | head -1)" == "OpenTofu v$VERSION" ]]; }

if ! built; then
  mkdir -p "$HOME_DIR/$VERSION"
  exec 9>"$HOME_DIR/$VERSION.lock"
  flock 9
  if ! built; then
    say "downloading github.com/opentofu/opentofu@v$VERSION from the Go module proxy"
    src="$(go mod download -json "github.com/opentofu/opentofu@v$VERSION" |
      sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')"
    [[ -n "$src" && -d "$src" ]] || die "go mod download gave no source folder for OpenTofu v$VERSION"
    work="$(mktemp -d "$HOME_DIR/$VERSION/build.XXXXXX")"
    trap 'rm -rf "$work"' EXIT
    # The module cache is read-only; go build wants to write go.sum updates next to go.mod.
    cp -r "$src/." "$work/"
    chmod -R u+w "$work"
    say "building tofu (a few minutes the first time)"
    (cd "$work" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X github.com/opentofu/opentofu/version.dev=no" -o "$BIN.tmp" ./cmd/tofu)
    mv "$BIN.tmp" "$BIN"
    rm -rf "$work"
    trap - EXIT
  fi
  exec 9>&-
fi
built || die "tofu $VERSION did not build"
say "$("$BIN" version 2>/dev/null | head -1)"

say "building and vetting terraform-provider-hcp"
(cd terraform-provider-hcp && go build ./... && go vet ./...)

echo "HCP_TOFU_BIN=$BIN"
