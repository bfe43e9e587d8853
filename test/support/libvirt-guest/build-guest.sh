#!/usr/bin/env bash
# Builds the libvirt test guest from Debian's packages only: Debian's kernel, a busybox-static initramfs
# and a FAT disk that syslinux boots (no loop devices, no mounts, no root needed). Two base images:
#   hcp-test-guest.qcow2       powers itself off on the ACPI power button (acpid -> poweroff -f)
#   hcp-test-guest-deaf.qcow2  the same guest without acpid: it ignores ACPI requests
# Usage: build-guest.sh OUT_DIR  (prints nothing else on success; OUT_DIR gets both images)
set -euo pipefail
OUT="$1"
HERE="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$OUT"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/hcp-guest-build.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"

KPKG="$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/{print $2; exit}')"
[[ -n "$KPKG" ]] || { echo "no Debian kernel package found (apt-get update?)" >&2; exit 1; }
if ! ls "$OUT"/"$KPKG"_*.deb >/dev/null 2>&1; then
  (cd "$OUT" && apt-get download "$KPKG" 2>/dev/null)
fi
DEB="$(ls "$OUT"/"$KPKG"_*.deb | head -1)"

# The kernel and the two modules the power button needs (Debian builds both as modules).
dpkg-deb --fsys-tarfile "$DEB" | tar -x --wildcards './boot/vmlinuz-*' \
  './lib/modules/*/kernel/drivers/acpi/button.ko' './lib/modules/*/kernel/drivers/input/evdev.ko'

mkdir -p root/bin root/proc root/sys root/dev root/etc/acpi/PWRF root/lib/modules
cp /bin/busybox root/bin/busybox
cp lib/modules/*/kernel/drivers/acpi/button.ko lib/modules/*/kernel/drivers/input/evdev.ko root/lib/modules/
cp "$HERE/init" root/init
chmod 0755 root/init
# busybox acpid maps the power button to the action PWRF/00000080, run from its config directory.
printf '#!/bin/sh\necho "HCP test guest: power button, powering off" > /dev/console\npoweroff -f\n' \
  > root/etc/acpi/PWRF/00000080
chmod 0755 root/etc/acpi/PWRF/00000080
(cd root && find . | cpio -o -H newc --quiet | gzip -9) > initrd.gz

make_disk() { # name, extra kernel arguments
  rm -f disk.img
  mkfs.vfat -C -n HCPGUEST disk.img 24576 >/dev/null
  cat > syslinux.cfg <<CFG
DEFAULT hcp
PROMPT 0
TIMEOUT 0
LABEL hcp
  KERNEL vmlinuz
  APPEND initrd=initrd.gz console=ttyS0 console=tty0 panic=-1 $2
CFG
  mcopy -i disk.img boot/vmlinuz-* ::/vmlinuz
  mcopy -i disk.img initrd.gz ::/initrd.gz
  mcopy -i disk.img syslinux.cfg ::/syslinux.cfg
  syslinux --install disk.img
  qemu-img convert -f raw -O qcow2 disk.img "$OUT/$1.tmp"
  mv "$OUT/$1.tmp" "$OUT/$1"
}
make_disk hcp-test-guest.qcow2 ''
make_disk hcp-test-guest-deaf.qcow2 'hcp.acpi=off'
