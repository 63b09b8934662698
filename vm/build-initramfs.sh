#!/usr/bin/env bash
# vm/build-initramfs.sh — build the micro-VM's initramfs from what vm/fetch.sh unpacked.
#
#   vm/build-initramfs.sh      → $VM_DIR/initramfs.cpio (VM_DIR defaults to build/vm)
#
# It holds busybox (static) with its applet links, the kernel modules the VM needs (exact .ko
# files of the fetched kernel, dependencies first, decompressed when the package ships them
# compressed, since busybox insmod reads plain .ko only), the load order in /modules/order, and
# vm/init.sh as /init. Everything else (btvirt, the command to run, its libraries) comes from the
# host's root, shared read-only over 9p. Rebuilds only when an input is newer than the output.
# Left uncompressed (about 5 MB): qemu loads it in no time, and the guest's kernel would otherwise
# spend a second of emulated CPU unpacking it.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VM_DIR="${VM_DIR:-$ROOT/build/vm}"
UNPACK="$VM_DIR/root"
OUT="$VM_DIR/initramfs.cpio"

say() { printf 'vm-initramfs: %s\n' "$*" >&2; }
die() { printf 'vm-initramfs: error: %s\n' "$*" >&2; exit 1; }

[ -f "$VM_DIR/kernel-version" ] || die "nothing fetched yet: run vm/fetch.sh (make vm-fetch) first"
KVER="$(cat "$VM_DIR/kernel-version")"
MODDIR="$UNPACK/lib/modules/$KVER"
BUSYBOX="$UNPACK/bin/busybox"
[ -d "$MODDIR" ] || die "no $MODDIR: run vm/fetch.sh again"
[ -x "$BUSYBOX" ] || die "no $BUSYBOX: run vm/fetch.sh again"

# What the VM loads, in the order that was measured to work (ARCHITECTURE.md, "Verified facts"):
# virtio and 9p for the host's root, then Bluetooth with vhci, and the crypto that LE needs at
# run time (bluetooth asks for ecdh, AES-CMAC and ECB by name, and nothing in the VM can
# modprobe them on demand; AF_ALG is how btvirt reaches them). LE Secure Connections also needs
# the kernel's default random generator: SMP's P-256 key pair comes from ecc's private key, which
# ecc draws from "stdrng" (drbg, HMAC-SHA-512; it runs without jitterentropy_rng, which does not
# load here: unknown symbol); without it Linux
# answers every Secure Connections pairing with Pairing Failed, Unspecified Reason.
WANTED="virtio_ring virtio virtio_pci_modern_dev virtio_pci_legacy_dev virtio_pci
netfs fscache 9pnet 9pnet_virtio 9p
sha512_generic drbg
ecc ecdh_generic rfkill crc16 bluetooth hci_vhci
af_alg algif_hash algif_skcipher cmac ecb"

if [ -f "$OUT" ] && [ "$OUT" -nt "$0" ] && [ "$OUT" -nt "$ROOT/vm/init.sh" ] \
   && [ "$OUT" -nt "$VM_DIR/kernel-version" ] && [ "$OUT" -nt "$BUSYBOX" ]; then
  say "up to date: $OUT"
  exit 0
fi

# Module name → its file (any of .ko .ko.xz .ko.zst .ko.gz), from the unpacked tree.
declare -A FILE=()
while IFS= read -r f; do
  base="${f##*/}"; name="${base%%.ko*}"
  FILE[$name]="$f"; FILE[${name//-/_}]="$f"
done < <(find "$MODDIR/kernel" -name '*.ko*')
BUILTIN=" $(sed 's|.*/||; s|\.ko$||' "$MODDIR/modules.builtin" 2>/dev/null | tr '\n-' ' _') "

# Hard dependencies, from the module's own .modinfo (modinfo when the host has it; else read the
# "depends=" string out of the file).
deps_of() {
  local f="$1" tmp
  case "$f" in
    *.ko.xz)  tmp="$(mktemp)"; xz -dc "$f" > "$tmp" ;;
    *.ko.zst) tmp="$(mktemp)"; zstd -qdc "$f" > "$tmp" ;;
    *.ko.gz)  tmp="$(mktemp)"; gzip -dc "$f" > "$tmp" ;;
    *)        tmp="" ;;
  esac
  local ko="${tmp:-$f}"
  if command -v modinfo >/dev/null; then
    modinfo -F depends "$ko" 2>/dev/null
  else
    tr '\0' '\n' < "$ko" | sed -n 's/^depends=//p' | head -1
  fi | tr ',' ' '
  [ -z "$tmp" ] || rm -f "$tmp"
}

ORDER=()
declare -A SEEN=()
add() {  # depth-first: dependencies before the module
  local m="${1//-/_}" d
  [ -n "${SEEN[$m]:-}" ] && return 0
  SEEN[$m]=1
  case "$BUILTIN" in *" $m "*) return 0 ;; esac   # built into this kernel: nothing to load
  [ -n "${FILE[$m]:-}" ] || die "module $m is not in $MODDIR (kernel $KVER)"
  for d in $(deps_of "${FILE[$m]}"); do add "$d"; done
  ORDER+=("$m")
}
for m in $WANTED; do add "$m"; done

STAGE="$(mktemp -d "$VM_DIR/initramfs.XXXXXX")"
trap 'rm -rf "$STAGE"' EXIT
mkdir -p "$STAGE"/{bin,sbin,dev,proc,sys,host,modules,tmp}
cp "$BUSYBOX" "$STAGE/bin/busybox"
for applet in $("$BUSYBOX" --list); do
  [ "$applet" = busybox ] || ln -sf busybox "$STAGE/bin/$applet"
done
for m in "${ORDER[@]}"; do
  f="${FILE[$m]}"
  case "$f" in
    *.ko.xz)  xz -dc "$f" > "$STAGE/modules/$m.ko" ;;
    *.ko.zst) zstd -qdc "$f" > "$STAGE/modules/$m.ko" ;;
    *.ko.gz)  gzip -dc "$f" > "$STAGE/modules/$m.ko" ;;
    *)        cp "$f" "$STAGE/modules/$m.ko" ;;
  esac
  echo "$m" >> "$STAGE/modules/order"
done
cp "$ROOT/vm/init.sh" "$STAGE/init"
chmod 755 "$STAGE/init"
( cd "$STAGE" && find . | LC_ALL=C sort | "$BUSYBOX" cpio -o -H newc 2>/dev/null ) > "$OUT.tmp"
mv "$OUT.tmp" "$OUT"
say "built $OUT ($(du -k "$OUT" | cut -f1) KiB): kernel $KVER, modules ${ORDER[*]}"
