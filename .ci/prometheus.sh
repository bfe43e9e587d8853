#!/usr/bin/env bash
# Prometheus and promtool for the monitoring tests (deploy/monitoring/), from Debian's `prometheus` package.
#
#   bash .ci/prometheus.sh
#
# Installs the package only when either binary is missing, so it is safe to run twice. The package's
# service is never used: the tests start their own Prometheus on a random loopback port with a temporary
# config and storage folder. Without systemd the package's postinst cannot start the service; a
# policy-rc.d answering 101 ("action forbidden") for the duration of the install keeps it from trying,
# and is removed afterwards (a policy-rc.d that was already there is left alone).
#
# Prints two lines last, for .ci/run to export both:
#   HCP_PROMTOOL_BIN=<path of promtool>
#   HCP_PROMETHEUS_BIN=<path of prometheus>
set -euo pipefail

say() { echo "prometheus.sh: $*" >&2; }
die() { say "$*"; exit 1; }

find_bins() {
  PROMETHEUS_BIN="$(command -v prometheus || true)"
  PROMTOOL_BIN="$(command -v promtool || true)"
}

find_bins
if [[ -z "$PROMETHEUS_BIN" || -z "$PROMTOOL_BIN" ]]; then
  say "installing Debian's prometheus package"
  export DEBIAN_FRONTEND=noninteractive
  policy=/usr/sbin/policy-rc.d
  ours=0
  if [[ ! -e "$policy" ]]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy"
    chmod 0755 "$policy"
    ours=1
  fi
  trap '[[ $ours == 1 ]] && rm -f "$policy"' EXIT
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends prometheus >/dev/null
  find_bins
fi

[[ -x "$PROMETHEUS_BIN" ]] || die "prometheus is still missing after the install"
[[ -x "$PROMTOOL_BIN" ]] || die "promtool is still missing after the install"
say "$("$PROMETHEUS_BIN" --version 2>&1 | head -1)"
echo "HCP_PROMTOOL_BIN=$PROMTOOL_BIN"
echo "HCP_PROMETHEUS_BIN=$PROMETHEUS_BIN"
