#!/usr/bin/env bash
# vm/fetch.sh — gather everything BLELab's vhci micro-VM needs, from Debian packages only.
#
#   vm/fetch.sh            (VM_DIR defaults to build/vm under the repository)
#
# Into $VM_DIR (nothing else is downloaded):
#   debs/                  the .deb files: linux-image-amd64, its versioned linux-image-*-amd64,
#                          busybox-static
#   root/                  those packages unpacked with dpkg-deb -x (boot/vmlinuz-*, lib/modules/*,
#                          bin/busybox)
#   kernel-version         the unpacked kernel's version (e.g. 6.1.0-41-amd64)
# On the host (apt-get install -y --no-install-recommends, sudo only when not root), when missing:
#   qemu-system-x86        qemu-system-x86_64, which boots the VM
#   bluez-test-tools       btvirt, which the guest runs from the host's root (shared over 9p)
#   bluez                  btmgmt/hciconfig/btmon, handy inside the guest; bluetoothd and
#                          bluetoothctl for the BlueZ tier (vm/guest-run.sh --bluez, make e2e-bluez)
#   dbus-daemon, dbus-bin  the guest's system bus for bluetoothd, and dbus-send (--bluez)
# A second run finds all of it in place and does nothing (no network).
# VM_FETCH_HOST_TOOLS=0 leaves the host tools out (docker/Dockerfile's kernel stage: only the
# kernel and busybox are wanted there; the image's last stage installs the tools).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VM_DIR="${VM_DIR:-$ROOT/build/vm}"
DEBS="$VM_DIR/debs"
UNPACK="$VM_DIR/root"

say() { printf 'vm-fetch: %s\n' "$*" >&2; }
die() { printf 'vm-fetch: error: %s\n' "$*" >&2; exit 1; }

SUDO=""
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null || die "not root and no sudo: cannot apt-get install"
  SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive

APT_UPDATED=0
apt_update_once() {
  if [ "$APT_UPDATED" = 0 ]; then
    say "apt-get update (package lists)"
    $SUDO apt-get update -qq || die "apt-get update failed"
    APT_UPDATED=1
  fi
}

# --- host tools ---------------------------------------------------------------------------------
need_pkgs=()
if [ "${VM_FETCH_HOST_TOOLS:-1}" = 0 ]; then
  say "VM_FETCH_HOST_TOOLS=0: host tools not checked"
else
command -v qemu-system-x86_64 >/dev/null || need_pkgs+=(qemu-system-x86)
[ -x /usr/bin/btvirt ] || need_pkgs+=(bluez-test-tools)
{ command -v btmgmt && command -v bluetoothctl && { command -v bluetoothd || [ -x /usr/libexec/bluetooth/bluetoothd ]; }; } >/dev/null \
  || need_pkgs+=(bluez)
command -v dbus-daemon >/dev/null || need_pkgs+=(dbus-daemon)
command -v dbus-send >/dev/null || need_pkgs+=(dbus-bin)
if [ "${#need_pkgs[@]}" -gt 0 ]; then
  say "installing host packages: ${need_pkgs[*]} (apt-get install -y --no-install-recommends)"
  apt_update_once
  $SUDO apt-get install -y -qq --no-install-recommends "${need_pkgs[@]}" >/dev/null \
    || die "apt-get install ${need_pkgs[*]} failed"
else
  say "host tools present: $(command -v qemu-system-x86_64), /usr/bin/btvirt, $(command -v btmgmt), bluetoothd, dbus-daemon"
fi
fi

# --- guest packages (downloaded into the build folder, never installed on the host) -------------
mkdir -p "$DEBS" "$UNPACK"

# apt-get download PKG into $DEBS unless a .deb of it is already there; prints the .deb's path.
download() {
  local pkg="$1" deb
  deb="$(ls "$DEBS/${pkg}_"*.deb 2>/dev/null | head -1 || true)"
  if [ -z "$deb" ]; then
    say "apt-get download $pkg"
    ( cd "$DEBS" && apt-get download -qq "$pkg" >/dev/null 2>&1 ) || {
      apt_update_once
      ( cd "$DEBS" && apt-get download -qq "$pkg" >/dev/null ) || die "apt-get download $pkg failed"
    }
    deb="$(ls "$DEBS/${pkg}_"*.deb 2>/dev/null | head -1 || true)"
    [ -n "$deb" ] || die "apt-get download $pkg left no .deb in $DEBS"
  fi
  printf '%s\n' "$deb"
}

unpack() {
  local deb="$1" stamp
  stamp="$UNPACK/.unpacked-$(basename "$deb")"
  if [ ! -e "$stamp" ]; then
    say "dpkg-deb -x $(basename "$deb")"
    dpkg-deb -x "$deb" "$UNPACK"
    touch "$stamp"
  fi
}

meta="$(download linux-image-amd64)"
# The meta package depends on exactly one versioned image package: linux-image-6.1.0-NN-amd64.
image_pkg="$(dpkg-deb -f "$meta" Depends | tr ',' '\n' | sed 's/[ (].*//; s/^ *//' \
  | grep -E '^linux-image-[0-9].*-amd64$' | head -1)"
[ -n "$image_pkg" ] || die "cannot find the versioned image package in $(basename "$meta")'s Depends"
image="$(download "$image_pkg")"
busybox="$(download busybox-static)"

unpack "$image"
unpack "$busybox"

kver="${image_pkg#linux-image-}"
[ -d "$UNPACK/lib/modules/$kver" ] || die "no lib/modules/$kver after unpacking $(basename "$image")"
[ -f "$UNPACK/boot/vmlinuz-$kver" ] || die "no boot/vmlinuz-$kver after unpacking $(basename "$image")"
[ -x "$UNPACK/bin/busybox" ] || die "no bin/busybox after unpacking $(basename "$busybox")"
[ "$(cat "$VM_DIR/kernel-version" 2>/dev/null)" = "$kver" ] || printf '%s\n' "$kver" > "$VM_DIR/kernel-version"

# The uncompressed kernel (ELF vmlinux), for qemu's PVH direct boot: it skips the firmware's
# real-mode path and, above all, decompressing ~8 MB of xz under software emulation (measured
# here: boot to /init in about half the time). Cut out of vmlinuz at the compressed payload's
# magic; vm/run.sh falls back to vmlinuz when this fails or the kernel lacks CONFIG_PVH.
vmlinuz="$UNPACK/boot/vmlinuz-$kver"
vmlinux="$VM_DIR/vmlinux-$kver"
if [ ! -s "$vmlinux" ] && grep -q '^CONFIG_PVH=y' "$UNPACK/boot/config-$kver" 2>/dev/null; then
  for fmt in 'xz:\xFD7zXZ\x00:xz -dc --single-stream' 'zstd:\x28\xB5\x2F\xFD:zstd -qdc' \
             'gzip:\x1F\x8B\x08:gzip -dc'; do
    name="${fmt%%:*}"; rest="${fmt#*:}"; magic="${rest%%:*}"; tool="${rest#*:}"
    command -v "${tool%% *}" >/dev/null || continue
    off="$(LC_ALL=C grep -obUaP "$magic" "$vmlinuz" | head -1 | cut -d: -f1)"
    [ -n "$off" ] || continue
    tail -c +"$((off + 1))" "$vmlinuz" | $tool > "$vmlinux.tmp" 2>/dev/null || true
    if [ "$(head -c 4 "$vmlinux.tmp" | od -An -tx1 | tr -d ' ')" = 7f454c46 ]; then
      mv "$vmlinux.tmp" "$vmlinux"
      say "extracted $(basename "$vmlinux") from vmlinuz ($name payload) for PVH boot"
      break
    fi
  done
  rm -f "$vmlinux.tmp"
  [ -s "$vmlinux" ] || say "note: could not extract vmlinux from vmlinuz; the VM will boot vmlinuz (slower)"
fi

say "kernel $kver: $UNPACK/boot/vmlinuz-$kver"
say "modules: $UNPACK/lib/modules/$kver"
say "busybox: $UNPACK/bin/busybox"
