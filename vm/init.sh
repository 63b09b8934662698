#!/bin/sh
# /init of BLELab's vhci micro-VM (busybox sh; built into the initramfs by vm/build-initramfs.sh).
#
# Kernel command line (set by vm/run.sh):
#   blelab.rw=DIR    host folder exported read-write (9p tag "rw"), mounted at the same path
#   blelab.job=DIR   job folder inside DIR; holds job.env (BLELAB_N, BLELAB_CWD, BLELAB_GUEST,
#                    BLELAB_GUEST_ARGS) and cmd (a bash script: the command to run); gets
#                    output.log and status back
# Steps: mount proc/sys/dev, insmod /modules in /modules/order, mount the host's root read-only
# at /host (9p tag "hostroot") and DIR over /host/DIR, give the chroot proc/sys/dev/tmp, then
#   chroot /host  BLELAB_GUEST -n BLELAB_N BLELAB_GUEST_ARGS -- bash JOB/cmd     (in BLELAB_CWD)
# and write its exit status to JOB/status and its output to JOB/output.log (and the console).
# Powers off in every case; the console (ttyS0) is vm/run.sh's log.
export PATH=/bin:/sbin

mount -t devtmpfs devtmpfs /dev 2>/dev/null
exec </dev/console >/dev/console 2>&1
mount -t proc proc /proc
mount -t sysfs sysfs /sys

log() { echo "blelab-vm: $*"; }
stop() { sync; poweroff -f; sleep 5; }
fail() { log "error: $*"; [ -n "$JOBH" ] && [ -d "$JOBH" ] && echo 70 > "$JOBH/status"; stop; }

RW=""; JOB=""; JOBH=""
for arg in $(cat /proc/cmdline); do
  case "$arg" in
    blelab.rw=*) RW="${arg#blelab.rw=}" ;;
    blelab.job=*) JOB="${arg#blelab.job=}" ;;
  esac
done
log "up $(cut -d' ' -f1 /proc/uptime) s, kernel $(uname -r)"

for m in $(cat /modules/order); do
  insmod "/modules/$m.ko" || fail "insmod $m failed"
done
log "$(wc -l < /modules/order) modules loaded: $(cut -d' ' -f1 /proc/uptime) s"

O9P="trans=virtio,version=9p2000.L,msize=262144"
mount -t 9p -o "$O9P,ro,cache=loose" hostroot /host || fail "cannot mount the host's root (9p tag hostroot)"
[ -n "$RW" ] || fail "no blelab.rw= on the kernel command line"
[ -n "$JOB" ] || fail "no blelab.job= on the kernel command line"
mount -t 9p -o "$O9P" rw "/host$RW" || fail "cannot mount the writable export at $RW (9p tag rw)"
JOBH="/host$JOB"
[ -f "$JOBH/job.env" ] || fail "no $JOB/job.env"
mount -t proc proc /host/proc
mount -t sysfs sysfs /host/sys
mount -t devtmpfs devtmpfs /host/dev
mkdir -p /host/dev/pts /host/dev/shm 2>/dev/null
ln -s /proc/self/fd /host/dev/fd; ln -s fd/0 /host/dev/stdin; ln -s fd/1 /host/dev/stdout; ln -s fd/2 /host/dev/stderr
mount -t devpts devpts /host/dev/pts 2>/dev/null
mount -t tmpfs tmpfs /host/dev/shm
. "$JOBH/job.env"
# The chroot gets empty, writable /tmp and /run. A checkout that lives under one of them (a CI
# clone in /tmp) would vanish under the tmpfs: move its top folder aside first and put it back
# on top (rbind keeps the writable export mounted inside it).
KEEP=""
for p in "$RW" "$BLELAB_CWD" "$BLELAB_GUEST"; do
  case "$p" in
    /tmp/?*|/run/?*)
      top="$(echo "$p" | cut -d/ -f1-3)"
      case " $KEEP " in *" $top "*) ;; *) KEEP="$KEEP $top" ;; esac ;;
  esac
done
for d in $KEEP; do
  mkdir -p "/keep$d" && mount -o rbind "/host$d" "/keep$d" || fail "cannot keep $d"
done
mount -t tmpfs tmpfs /host/tmp
mount -t tmpfs tmpfs /host/run
for d in $KEEP; do
  mkdir -p "/host$d" && mount -o rbind "/keep$d" "/host$d" || fail "cannot put $d back"
done
[ -d /host/sys/kernel/debug ] && mount -t debugfs debugfs /host/sys/kernel/debug 2>/dev/null

log "host root mounted: $(cut -d' ' -f1 /proc/uptime) s; running $BLELAB_GUEST -n $BLELAB_N"

(
  chroot /host /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    HOME=/root TERM=dumb LANG=C.UTF-8 BLELAB_VM=1 \
    /bin/sh -c 'cd "$1" && shift && exec "$@"' sh "$BLELAB_CWD" \
    "$BLELAB_GUEST" -n "$BLELAB_N" $BLELAB_GUEST_ARGS -- /bin/bash "$JOB/cmd"
  echo $? > "$JOBH/status.tmp"
) 2>&1 | tee "$JOBH/output.log"
mv "$JOBH/status.tmp" "$JOBH/status" 2>/dev/null || echo 70 > "$JOBH/status"
log "done: status $(cat "$JOBH/status"), $(cut -d' ' -f1 /proc/uptime) s"
stop
