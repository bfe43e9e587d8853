#!/usr/bin/env bash
# Installs the HCP host agent on a Debian host, in one command, as root:
#
#   scripts/install-host-agent.sh --hcp https://hcp.example:8443 --token hcpb_...
#
# What it does (each step is skipped when already done, so running it again is safe):
#   1. installs libvirt and QEMU (apt) if they are missing, and checks for Node.js 20+
#   2. lets QEMU run as root (the user/group lines of /etc/libvirt/qemu.conf) and starts libvirt
#   3. creates the libvirt storage pool the agent puts disks in (dir pool, autostarted)
#   4. builds this checkout (npm ci, npm run build) if dist/ lacks the agent (or with --build)
#   5. enrolls the host with the bootstrap token (the credential goes to <state-dir>/credential.json, 0600)
#   6. installs and starts the systemd unit hcp-agent.service (Restart=always) running this checkout's build
# See docs/host-agent.md.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
HCP_URL=""
TOKEN="${HCP_AGENT_TOKEN:-}"
STATE_DIR=/var/lib/hcp-agent
IDENTITY=""
LIBVIRT_URI=qemu:///system
POOL=hcp
POOL_DIR=/var/lib/libvirt/images/hcp
NETWORK=""
VNC_LISTEN=""
CONSOLE_HOST=""
CA_FILE=""
CONCURRENCY=""
INSTALL_PACKAGES=1
BUILD=0
# Overridable so the script can be tried on a machine without touching /etc/systemd.
UNIT_FILE="${HCP_AGENT_UNIT_FILE:-/etc/systemd/system/hcp-agent.service}"

usage() {
  cat <<EOF
usage: $0 --hcp <url> --token <bootstrap token> [options]
  --hcp <url>             HCP's base URL (or its internal port's), reachable from this host
  --token <token>         bootstrap token from ops (POST /v1/ops/clusters/{id}/enrollments); or HCP_AGENT_TOKEN
  --state-dir <dir>       where the agent keeps its credential ($STATE_DIR)
  --identity <id>         this host's identity (default: /etc/machine-id, else the hostname)
  --libvirt-uri <uri>     ($LIBVIRT_URI)
  --pool <name>           libvirt storage pool for the VMs' disks ($POOL)
  --pool-dir <dir>        its directory, when the pool is created here ($POOL_DIR)
  --network <name>        libvirt network the guests join
  --vnc-listen <address>  address QEMU's VNC servers listen on (HCP's console proxy must reach it)
  --console-host <addr>   address HCP reaches this host's VNC servers on
  --ca-file <pem>         CA certificate HCP's TLS certificate chains to
  --concurrency <n>       calls the agent runs at once
  --no-packages           do not install packages (libvirt and QEMU are already there)
  --build                 build this checkout even if dist/ has the agent (after a git pull)
EOF
}

die() {
  echo "install-host-agent: $*" >&2
  exit 1
}
say() { echo "install-host-agent: $*"; }

while [ $# -gt 0 ]; do
  case "$1" in
    --hcp) HCP_URL="${2:?--hcp needs a value}"; shift 2 ;;
    --token) TOKEN="${2:?--token needs a value}"; shift 2 ;;
    --state-dir) STATE_DIR="${2:?--state-dir needs a value}"; shift 2 ;;
    --identity) IDENTITY="${2:?--identity needs a value}"; shift 2 ;;
    --libvirt-uri) LIBVIRT_URI="${2:?--libvirt-uri needs a value}"; shift 2 ;;
    --pool) POOL="${2:?--pool needs a value}"; shift 2 ;;
    --pool-dir) POOL_DIR="${2:?--pool-dir needs a value}"; shift 2 ;;
    --network) NETWORK="${2:?--network needs a value}"; shift 2 ;;
    --vnc-listen) VNC_LISTEN="${2:?--vnc-listen needs a value}"; shift 2 ;;
    --console-host) CONSOLE_HOST="${2:?--console-host needs a value}"; shift 2 ;;
    --ca-file) CA_FILE="${2:?--ca-file needs a value}"; shift 2 ;;
    --concurrency) CONCURRENCY="${2:?--concurrency needs a value}"; shift 2 ;;
    --no-packages) INSTALL_PACKAGES=0; shift ;;
    --build) BUILD=1; shift ;;
    -h | --help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument: $1" ;;
  esac
done

[ -n "$HCP_URL" ] || { usage >&2; die "--hcp is required"; }
[ "$(id -u)" -eq 0 ] || die "run as root: it installs packages, edits /etc/libvirt/qemu.conf and installs a systemd unit"
if [ -n "$CA_FILE" ]; then
  [ -r "$CA_FILE" ] || die "cannot read --ca-file $CA_FILE"
  CA_FILE="$(cd "$(dirname "$CA_FILE")" && pwd)/$(basename "$CA_FILE")"
fi

# 1. Packages.
if [ "$INSTALL_PACKAGES" = 1 ]; then
  if ! command -v virsh >/dev/null || ! command -v qemu-system-x86_64 >/dev/null || ! command -v qemu-img >/dev/null \
    || ! command -v libvirtd >/dev/null; then
    say "installing libvirt and QEMU"
    apt-get update
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libvirt-daemon-system libvirt-clients qemu-system-x86 qemu-utils
  fi
fi
command -v virsh >/dev/null || die "virsh is missing: install libvirt-clients (or run without --no-packages)"
NODE="$(command -v node || true)"
[ -n "$NODE" ] || die "Node.js 20 or later is needed (https://nodejs.org, or Debian's nodejs from bookworm-backports)"
NODE_MAJOR="$("$NODE" -p 'process.versions.node.split(".")[0]')"
[ "$NODE_MAJOR" -ge 20 ] || die "Node.js 20 or later is needed; $NODE is $("$NODE" --version)"

# 2. QEMU as root (libvirt's default user cannot open disks in 0700 dirs, and /dev/kvm at 0600 makes
#    libvirt re-probe QEMU on every start), then libvirt running.
QEMU_CONF=/etc/libvirt/qemu.conf
QEMU_CONF_CHANGED=0
if [ -f "$QEMU_CONF" ] && ! grep -q '^user = "root"' "$QEMU_CONF"; then
  say "setting user/group root in $QEMU_CONF"
  printf '\n# HCP host agent: QEMU runs as root (scripts/install-host-agent.sh)\nuser = "root"\ngroup = "root"\n' >>"$QEMU_CONF"
  QEMU_CONF_CHANGED=1
fi
HAS_SYSTEMD=0
[ -d /run/systemd/system ] && HAS_SYSTEMD=1
if [ "$HAS_SYSTEMD" = 1 ]; then
  systemctl enable --now libvirtd.service >/dev/null 2>&1 || systemctl enable --now virtqemud.service
  if [ "$QEMU_CONF_CHANGED" = 1 ]; then
    systemctl restart libvirtd.service 2>/dev/null || systemctl restart virtqemud.service
  fi
elif ! virsh -c "$LIBVIRT_URI" version >/dev/null 2>&1; then
  say "systemd is not running: starting virtlogd and libvirtd as daemons"
  pgrep -x virtlogd >/dev/null || virtlogd -d
  pgrep -x libvirtd >/dev/null || libvirtd -d
fi
for _ in $(seq 1 100); do
  virsh -c "$LIBVIRT_URI" version >/dev/null 2>&1 && break
  sleep 0.2
done
virsh -c "$LIBVIRT_URI" version >/dev/null 2>&1 || die "libvirt does not answer at $LIBVIRT_URI"

# 3. The storage pool.
if ! virsh -c "$LIBVIRT_URI" pool-info "$POOL" >/dev/null 2>&1; then
  say "creating storage pool $POOL in $POOL_DIR"
  virsh -c "$LIBVIRT_URI" pool-define-as "$POOL" dir --target "$POOL_DIR" >/dev/null
  virsh -c "$LIBVIRT_URI" pool-build "$POOL" >/dev/null
fi
POOL_INFO="$(virsh -c "$LIBVIRT_URI" pool-info "$POOL")"
if ! grep -q '^State:.*running' <<<"$POOL_INFO"; then
  virsh -c "$LIBVIRT_URI" pool-start "$POOL" >/dev/null
fi
virsh -c "$LIBVIRT_URI" pool-autostart "$POOL" >/dev/null

# 4. The agent's build.
AGENT="$REPO/dist/src/host-agent/main.js"
if [ "$BUILD" = 1 ] || [ ! -f "$AGENT" ]; then
  say "building $REPO"
  (cd "$REPO" && { [ -d node_modules ] || npm ci; } && npm run build)
fi
[ -f "$AGENT" ] || die "no $AGENT after the build"

AGENT_ARGS=(--hcp "$HCP_URL" --state-dir "$STATE_DIR" --libvirt-uri "$LIBVIRT_URI" --pool "$POOL")
[ -n "$IDENTITY" ] && AGENT_ARGS+=(--identity "$IDENTITY")
[ -n "$NETWORK" ] && AGENT_ARGS+=(--network "$NETWORK")
[ -n "$VNC_LISTEN" ] && AGENT_ARGS+=(--vnc-listen "$VNC_LISTEN")
[ -n "$CONSOLE_HOST" ] && AGENT_ARGS+=(--console-host "$CONSOLE_HOST")
[ -n "$CA_FILE" ] && AGENT_ARGS+=(--ca-file "$CA_FILE")
[ -n "$CONCURRENCY" ] && AGENT_ARGS+=(--concurrency "$CONCURRENCY")

# 5. Enrollment (once: the token is single-use; a host enrolled before keeps its credential). The token
#    goes by environment, not argv, so other users cannot read it from the process list.
if [ ! -f "$STATE_DIR/credential.json" ] && [ -z "$TOKEN" ]; then
  die "this host is not enrolled yet: pass --token (a bootstrap token from ops)"
fi
set +e
HCP_AGENT_TOKEN="$TOKEN" "$NODE" "$AGENT" "${AGENT_ARGS[@]}" --enroll-only
ENROLL_CODE=$?
set -e
case "$ENROLL_CODE" in
  0) ;;
  2) die "the agent refused its arguments (exit 2); see the line above" ;;
  3) die "cannot enroll (exit 3); see the line above" ;;
  5) die "the credential file cannot be used (exit 5); see the line above" ;;
  *) die "enrollment failed (exit $ENROLL_CODE)" ;;
esac

# 6. The service. Exit codes 2 (arguments), 4 (credential revoked) and 5 (credential file) need a person:
#    systemd does not restart the agent into the same failure.
quote_args() {
  local out="" arg
  for arg in "$@"; do
    out+=" \"${arg//\"/\\\"}\""
  done
  printf '%s' "$out"
}
cat >"$UNIT_FILE" <<EOF
[Unit]
Description=HCP host agent (runs HCP's VM calls on this host's libvirt)
Documentation=file://$REPO/docs/host-agent.md
After=network-online.target libvirtd.service
Wants=network-online.target libvirtd.service

[Service]
Type=simple
ExecStart="$NODE" "$AGENT"$(quote_args "${AGENT_ARGS[@]}")
Restart=always
RestartSec=5
RestartPreventExitStatus=2 4 5
KillSignal=SIGTERM
TimeoutStopSec=30
UMask=0077

[Install]
WantedBy=multi-user.target
EOF
say "installed $UNIT_FILE"
if [ "$HAS_SYSTEMD" = 1 ]; then
  systemctl daemon-reload
  systemctl enable hcp-agent.service >/dev/null
  systemctl restart hcp-agent.service
  say "hcp-agent.service is running; follow it with: journalctl -u hcp-agent -f"
else
  say "systemd is not running here; start the agent with:"
  say "  $NODE $AGENT$(printf ' %q' "${AGENT_ARGS[@]}")"
fi
