#!/usr/bin/env bash
# vm/run.sh — run a command next to N Linux virtual Bluetooth LE controllers, in a micro-VM.
#
# Usage: vm/run.sh [OPTIONS] N -- COMMAND [ARG…]
#
# Boots Debian's stock kernel (from vm/fetch.sh) under qemu-system-x86_64 with the initramfs of
# vm/build-initramfs.sh; the guest shares the host's root read-only (so host binaries run inside
# unchanged, at the same paths) and one host folder read-write (default: the repository's build/,
# at the same path), starts `btvirt -lN -L` through vm/guest-run.sh, and runs COMMAND as root in
# `chroot /host`, in this shell's current directory, with BLELAB_HCI=0,1,… set. COMMAND's output
# appears on the console; this script streams the console and exits with COMMAND's status.
#
# Options:
#   --timeout S      whole boot + run limit, seconds (default $VM_TIMEOUT or 900)
#   --rw DIR         the host folder the guest may write (default $VM_RW or <repo>/build);
#                    COMMAND's results must go there
#   --env NAME=VAL   set a variable for COMMAND (repeatable)
#   --guest-arg ARG  pass ARG to vm/guest-run.sh (repeatable), e.g. --guest-arg --ready-by=mgmt
#   --mem MiB        guest memory (default 1024)      --smp K   guest CPUs (default 2)
#   --accel A        kvm, tcg or auto (default $VM_ACCEL or auto: KVM when it really runs a
#                    guest here, TCG otherwise)
#   -q, --quiet      don't stream the console (it is still saved)
#   --kernel-log     the kernel's messages on the console too (loglevel 7, earlyprintk), to see
#                    where a boot stops
# Prints `vm_boot_s: X s` (qemu start → controllers ready, host wall clock) and `vm_total_s: X s`.
# Files: <jobs>/ID/{console.log,output.log,status,cmd,job.env} with <jobs> = build/vm/jobs when
# the writable folder holds build/vm, else DIR/.blelab-vm-jobs; build/vm/last-console.log is a
# copy of the latest console.
# Exit status: COMMAND's; 124 on timeout, 125 when the VM failed before COMMAND ended or the
# guest's clock disagreed with the host's (by more than 2 s + 10 % between /init's start and end),
# 130 when interrupted, 64 on bad usage. VM_KERNEL_ARGS adds guest kernel arguments.
set -uo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VM_DIR="${VM_DIR:-$ROOT/build/vm}"
TIMEOUT="${VM_TIMEOUT:-900}"
RW="${VM_RW:-$ROOT/build}"
ACCEL="${VM_ACCEL:-auto}"
MEM=1024
SMP=2
QUIET=0
KLOG=0
ENVS=()
GUEST_ARGS=()

say() { printf 'vm-run: %s\n' "$*" >&2; }
usage() { say "usage: vm/run.sh [--timeout S] [--rw DIR] [--env NAME=VAL] [--mem MiB] [--smp K] [--accel kvm|tcg|auto] [-q] N -- COMMAND [ARG…]"; exit 64; }

while [ $# -gt 0 ]; do
  case "$1" in
    --timeout) TIMEOUT="${2:?}"; shift 2 ;;
    --rw) RW="${2:?}"; shift 2 ;;
    --env) ENVS+=("${2:?}"); shift 2 ;;
    --guest-arg) GUEST_ARGS+=("${2:?}"); shift 2 ;;
    --mem) MEM="${2:?}"; shift 2 ;;
    --smp) SMP="${2:?}"; shift 2 ;;
    --accel) ACCEL="${2:?}"; shift 2 ;;
    -q|--quiet) QUIET=1; shift ;;
    --kernel-log) KLOG=1; shift ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) say "unknown option $1"; usage ;;
    *) break ;;
  esac
done
[ $# -ge 3 ] && [ "$2" = "--" ] || usage
N="$1"; shift 2
case "$N" in ''|*[!0-9]*) say "N must be a number of controllers, not '$N'"; usage ;; esac
case "$TIMEOUT" in ''|*[!0-9]*) say "--timeout wants whole seconds"; usage ;; esac
for a in "${GUEST_ARGS[@]}"; do
  case "$a" in *[!A-Za-z0-9=._/:-]*) say "--guest-arg: letters, digits and =._/:- only, not '$a'"; usage ;; esac
done
for e in "${ENVS[@]}"; do
  case "$e" in [A-Za-z_]*=*) ;; *) say "--env wants NAME=VALUE, not '$e'"; usage ;; esac
done

mkdir -p "$RW" || exit 64
RW="$(cd "$RW" && pwd -P)"
CWD="$(pwd -P)"
case "$RW$CWD$ROOT" in *[[:space:]]*) say "paths with spaces are not supported (kernel command line): $RW, $CWD"; exit 64 ;; esac

# --- what the VM is made of ----------------------------------------------------------------------
# VM_PREBUILT=1 (the Docker image, which holds them without the .debs): use what is in $VM_DIR.
if [ "${VM_PREBUILT:-0}" = 1 ]; then
  [ -f "$VM_DIR/kernel-version" ] && [ -f "$VM_DIR/initramfs.cpio" ] \
    || { say "error: VM_PREBUILT=1 but $VM_DIR has no kernel-version or initramfs.cpio"; exit 125; }
else
  "$ROOT/vm/fetch.sh" || { say "error: vm/fetch.sh failed"; exit 125; }
  "$ROOT/vm/build-initramfs.sh" || { say "error: vm/build-initramfs.sh failed"; exit 125; }
fi
KVER="$(cat "$VM_DIR/kernel-version")"
KERNEL="$VM_DIR/root/boot/vmlinuz-$KVER"
# The uncompressed ELF kernel boots through PVH, skipping decompression (see vm/fetch.sh).
[ -s "$VM_DIR/vmlinux-$KVER" ] && [ "${VM_KERNEL:-}" != vmlinuz ] && KERNEL="$VM_DIR/vmlinux-$KVER"
INITRD="$VM_DIR/initramfs.cpio"
QEMU="$(command -v qemu-system-x86_64)" || { say "error: no qemu-system-x86_64"; exit 125; }

# --- KVM or TCG ------------------------------------------------------------------------------------
# /dev/kvm can exist and still not run a guest (here: qemu aborts setting an MSR with -cpu host,
# and hangs with other models), so "works" means: the kernel printed its banner within 10 s.
# The answer is cached per host kernel and qemu version.
kvm_works() {
  [ -r /dev/kvm ] && [ -w /dev/kvm ] || { KVM_WHY="no usable /dev/kvm"; return 1; }
  local key cache="$VM_DIR/kvm-check" log pid i
  key="$(uname -r) | $("$QEMU" --version | head -1) | $KVER"
  if [ -f "$cache" ] && [ "$(sed -n 1p "$cache")" = "$key" ]; then
    KVM_WHY="$(sed -n 3p "$cache")"
    [ "$(sed -n 2p "$cache")" = yes ]; return
  fi
  log="$(mktemp)"
  # (in a subshell whose own stderr is dropped: bash would report qemu's abort there)
  ( "$QEMU" -accel kvm -cpu host -m 256 -nodefaults -display none -no-reboot -serial "file:$log" \
    -kernel "$KERNEL" -append "console=ttyS0 panic=-1" >"$log.err" 2>&1 ) 2>/dev/null &
  pid=$!
  KVM_WHY="the kernel printed nothing within 10 s under KVM"
  for i in $(seq 1 100); do
    if grep -q "Linux version" "$log"; then KVM_WHY="KVM runs a guest"; break; fi
    kill -0 "$pid" 2>/dev/null || { KVM_WHY="qemu -accel kvm failed: $(grep -v '^$' "$log.err" | head -1)"; break; }
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
  local ok=no; [ "$KVM_WHY" = "KVM runs a guest" ] && ok=yes
  rm -f "$log" "$log.err"
  printf '%s\n%s\n%s\n' "$key" "$ok" "$KVM_WHY" > "$cache"
  [ "$ok" = yes ]
}
case "$ACCEL" in
  kvm) ACCEL_ARGS=(-accel kvm -cpu host); say "accelerator: KVM (asked for)" ;;
  tcg) ACCEL_ARGS=(-accel tcg -cpu max); say "accelerator: TCG (asked for)" ;;
  auto) if kvm_works 2>/dev/null; then ACCEL_ARGS=(-accel kvm -cpu host); say "accelerator: KVM ($KVM_WHY)"
        else ACCEL_ARGS=(-accel tcg -cpu max); say "accelerator: TCG, software emulation ($KVM_WHY)"; fi ;;
  *) say "--accel wants kvm, tcg or auto"; usage ;;
esac

# --- the job ---------------------------------------------------------------------------------------
case "$VM_DIR/" in
  "$RW"/*) JOBS="$VM_DIR/jobs" ;;
  *) JOBS="$RW/.blelab-vm-jobs" ;;
esac
mkdir -p "$JOBS"
# keep the 10 latest jobs
ls -1dt "$JOBS"/*/ 2>/dev/null | tail -n +10 | xargs -r rm -rf
JOB="$(mktemp -d "$JOBS/$(date +%Y%m%d-%H%M%S)-XXXX")"
JOB="$(cd "$JOB" && pwd -P)"
{
  echo "# written by vm/run.sh: the command the micro-VM runs"
  for a in "${GUEST_ARGS[@]}"; do
  case "$a" in *[!A-Za-z0-9=._/:-]*) say "--guest-arg: letters, digits and =._/:- only, not '$a'"; usage ;; esac
done
for e in "${ENVS[@]}"; do printf 'export %q=%q\n' "${e%%=*}" "${e#*=}"; done
  printf 'exec'; printf ' %q' "$@"; printf '\n'
} > "$JOB/cmd"
{
  printf 'BLELAB_N=%s\n' "$N"
  printf "BLELAB_CWD='%s'\n" "$CWD"
  printf "BLELAB_GUEST='%s'\n" "$ROOT/vm/guest-run.sh"
  printf "BLELAB_GUEST_ARGS='%s'\n" "${GUEST_ARGS[*]:-}"
} > "$JOB/job.env"
CONSOLE="$JOB/console.log"
: > "$CONSOLE"

# cryptomgr.notests: no self-tests of each crypto algorithm as it registers (the kernel's own at
# boot, then ecdh, cmac, ecb… as their modules load) — seconds of emulated CPU under TCG.
# clocksource=hpet: the guest keeps time with the emulated HPET, which counts QEMU's clock (the
# host's monotonic time), not with a TSC whose rate the guest measured at boot: once, under TCG on
# a loaded machine, that measurement came out ~19 times too slow and the guest's clock ran ~19
# times too fast (every timeout inside expired early). VM_KERNEL_ARGS: more arguments, last.
APPEND="console=ttyS0 quiet loglevel=3 panic=-1 tsc=reliable clocksource=hpet cryptomgr.notests"
[ "$KLOG" = 0 ] || APPEND="console=ttyS0 earlyprintk=ttyS0 loglevel=7 panic=-1 tsc=reliable clocksource=hpet cryptomgr.notests"
APPEND="$APPEND blelab.rw=$RW blelab.job=$JOB${VM_KERNEL_ARGS:+ $VM_KERNEL_ARGS}"
QEMU_ARGS=(
  "${ACCEL_ARGS[@]}" -m "$MEM" -smp "$SMP"
  -nodefaults -display none -no-reboot -monitor none
  -serial "file:$CONSOLE"
  -kernel "$KERNEL" -initrd "$INITRD" -append "$APPEND"
  -fsdev local,id=r,path=/,security_model=none,readonly=on,multidevs=remap
  -device virtio-9p-pci,fsdev=r,mount_tag=hostroot
  -fsdev "local,id=w,path=$RW,security_model=none,multidevs=remap"
  -device virtio-9p-pci,fsdev=w,mount_tag=rw
)
printf '%q ' "$QEMU" "${QEMU_ARGS[@]}" > "$JOB/qemu-cmdline"

qemu_pid=""
stop_qemu() {
  if [ -n "$qemu_pid" ] && kill -0 "$qemu_pid" 2>/dev/null; then
    kill -TERM "$qemu_pid" 2>/dev/null
    for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$qemu_pid" 2>/dev/null || break; sleep 0.2; done
    kill -KILL "$qemu_pid" 2>/dev/null
    wait "$qemu_pid" 2>/dev/null
  fi
  qemu_pid=""
}
finish() {
  local code="$1"
  stop_qemu
  cp "$CONSOLE" "$VM_DIR/last-console.log" 2>/dev/null
  exit "$code"
}
tail_console() {
  say "last lines of the console log ($CONSOLE):"
  tail -n "${1:-40}" "$CONSOLE" | tr -d '\r' | sed 's/^/  | /' >&2
}
trap 'say "interrupted: stopping the VM"; finish 130' INT TERM

say "booting $(basename "$KERNEL") with $N controllers; job $JOB"
# A boot that stalls before /init prints anything (seen once in ~75 boots here, under TCG on a
# loaded machine: qemu at 100 % CPU, an empty console) is retried: nothing has run yet.
BOOT_TIMEOUT="${VM_BOOT_TIMEOUT:-60}"
BOOT_TRIES="${VM_BOOT_TRIES:-3}"
attempt=0
start_qemu() {
  attempt=$((attempt + 1))
  : > "$CONSOLE"
  shown=0; ready_at=""; booted=0; up_at=""; up_guest=""; done_at=""; done_guest=""
  t0=$(date +%s.%N)
  boot_deadline=$(( $(date +%s) + BOOT_TIMEOUT ))
  "$QEMU" "${QEMU_ARGS[@]}" 2>"$JOB/qemu.stderr" </dev/null &
  qemu_pid=$!
}

# Stream the console (new bytes every 0.1 s) and note when /init is up and when the controllers
# are ready (host wall clock, to 0.1 s).
pump() {
  local size
  size=$(stat -c %s "$CONSOLE" 2>/dev/null || echo 0)
  if [ "$size" -gt "$shown" ]; then
    [ "$QUIET" = 1 ] || tail -c +"$((shown + 1))" "$CONSOLE" | head -c "$((size - shown))" | tr -d '\r'
    shown=$size
    if [ "$booted" = 0 ] && grep -q "blelab-vm: up" "$CONSOLE"; then
      booted=1; up_at=$(date +%s.%N)
      up_guest="$(sed -n 's/^blelab-vm: up \([0-9.]*\) s.*/\1/p' "$CONSOLE" | head -1)"
    fi
    if [ -z "$done_at" ] && grep -q "blelab-vm: done: status" "$CONSOLE"; then
      done_at=$(date +%s.%N)
      done_guest="$(sed -n 's/^blelab-vm: done: status [0-9]*, \([0-9.]*\) s.*/\1/p' "$CONSOLE" | tr -d '\r' | head -1)"
    fi
    if [ -z "$ready_at" ] && grep -q "guest-run: controllers ready" "$CONSOLE"; then
      ready_at=$(date +%s.%N)
    fi
  fi
}
start_qemu
deadline=$(( $(date +%s) + TIMEOUT ))
while kill -0 "$qemu_pid" 2>/dev/null; do
  pump
  if [ "$(date +%s)" -ge "$deadline" ]; then
    say "error: timed out after $TIMEOUT s (boot + run); stopping the VM"
    tail_console 40
    finish 124
  fi
  if [ "$booted" = 0 ] && [ "$(date +%s)" -ge "$boot_deadline" ]; then
    stop_qemu
    cp "$CONSOLE" "$JOB/console.stalled-$attempt.log"
    if [ "$attempt" -ge "$BOOT_TRIES" ]; then
      say "error: the guest did not reach /init in $BOOT_TIMEOUT s, $attempt times; giving up"
      tail_console 40
      finish 125
    fi
    say "the guest did not reach /init in $BOOT_TIMEOUT s (a stalled boot); booting again ($((attempt + 1))/$BOOT_TRIES)"
    start_qemu
  fi
  sleep 0.1
done
wait "$qemu_pid"; qemu_rc=$?
t1=$(date +%s.%N)
qemu_pid=""
pump
cp "$CONSOLE" "$VM_DIR/last-console.log" 2>/dev/null

if [ -n "$ready_at" ]; then
  boot_s="$(awk -v a="$t0" -v b="$ready_at" 'BEGIN { printf "%.2f", b - a }')"
  printf 'vm_boot_s: %s s\n' "$boot_s"
  [ "$attempt" = 1 ] || say "($((attempt - 1)) stalled boot(s) retried before this one)"
  echo "$boot_s" > "$JOB/boot_s"
fi
printf 'vm_total_s: %s s\n' "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')"

if [ ! -f "$JOB/status" ]; then
  say "error: the VM stopped (qemu exit $qemu_rc) before the command finished"
  [ -s "$JOB/qemu.stderr" ] && sed 's/^/  qemu: /' "$JOB/qemu.stderr" >&2
  tail_console 40
  finish 125
fi
status="$(cat "$JOB/status")"
case "$status" in ''|*[!0-9]*) say "error: unreadable status '$status'"; finish 125 ;; esac
# The guest's clock against the host's, from /init's "up" line to its "done" line (each seen here
# within ~0.1 s): real-time limits inside (scenario timeouts, ATT's 30 s) are only right when the
# two agree. Beyond 2 s + 10 %, no verdict of the command is trusted.
if [ -n "$up_guest" ] && [ -n "$done_guest" ] && [ -n "$up_at" ] && [ -n "$done_at" ]; then
  if ! skew="$(awk -v g0="$up_guest" -v g1="$done_guest" -v h0="$up_at" -v h1="$done_at" 'BEGIN {
      g = g1 - g0; h = h1 - h0; d = g - h; if (d < 0) d = -d
      printf "the guest'"'"'s clock counted %.1f s while the host'"'"'s counted %.1f s", g, h
      exit (d > 2 + 0.1 * h) }')"; then
    say "error: $skew: every real-time limit inside was off, so the command's result (status $status) is not trusted (console: $CONSOLE)"
    finish 125
  fi
fi
if [ "$status" != 0 ]; then
  say "command exited with status $status (console: $CONSOLE)"
fi
finish "$status"
