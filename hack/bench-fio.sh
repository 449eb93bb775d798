#!/bin/sh
# bench-fio.sh: `kubeslow bench disk` (etcd's fio recipe) next to fio itself on the same device in the same run
# (issue 30). NOT run in CI: it needs root (a loop or zram device, a mount, a blkio throttle), installs fio if
# missing, and its figures depend on the machine being idle.
#
# ROUNDS rounds (at least 10) alternate the two tools (which goes first alternates too), each on a new
# directory of its own on DEVICE, with etcd's recipe (2,300-byte writes, fdatasync after each, 22 MiB):
#   fio --name=etcd --directory=DIR --rw=write --ioengine=sync --fdatasync=1 --size=22m --bs=2300
#   kubeslow bench disk --path DIR -o json
# Printed per round: each tool's fdatasync p50 and p99 (fio's from its "sync" latency section, lat_ns: the
# fdatasync call alone) and the ratios kubeslow/fio; then the medians of the per-round ratios and the ratio
# of the two tools' median p99s. The goal (issue 30): the median p99 ratio within 10% (0.90-1.10).
#
#   hack/bench-fio.sh                  # DEVICE=fast ROUNDS=10
#   DEVICE=slow hack/bench-fio.sh      # IOPS=1000
#   DEVICE=zram RT=1 ROUNDS=20 hack/bench-fio.sh   # the microsecond scale, on a machine others are using
#   DEVICE=dir DIR=/var/tmp hack/bench-fio.sh
#   KUBESLOW=/tmp/kubeslow-old hack/bench-fio.sh   # another build of kubeslow (default: builds bin/kubeslow)
#
# DEVICE:
#   fast  ext4 on a loop device whose image file is on a tmpfs of its own (RAM): no device latency, the
#         kernel's work (ext4's journal commit, the loop worker) and the CPU scheduler are what is timed.
#   slow  the same device held to IOPS write I/Os a second by blk-throttle (cgroup v1
#         blkio.throttle.write_iops_device in the blkio root, which holds both tools, ext4's journal thread
#         and the loop worker; the rule names this loop device only, and is removed at the end).
#   zram  ext4 on a zram device of its own (RAM, compressed; hot-added, then removed by its id): no worker
#         thread, the block I/O is done in the submitter's context, so only the tools and ext4's journal
#         thread run (with RT=1 all at SCHED_FIFO: the device least disturbed by other users' work).
#   dir   an existing directory DIR (the machine's own disk, shared with everyone's I/O).
# RT=1 (not with dir) runs both tools, and the new device's journal thread (jbd2), at SCHED_FIFO
# priority 20, so that other users' CPU-bound work on a shared machine does not decide the tail (the loop
# device's worker, a shared kworker, stays at its normal priority). Both tools get the same treatment; say so
# with the figures.
# The tmpfs, the loop or zram device, the mount and the throttle rule are removed at the end (by their paths,
# the zram id and the device number this run got), also on Ctrl-C.
set -eu
cd "$(dirname "$0")/.."
DEVICE=${DEVICE:-fast}
ROUNDS=${ROUNDS:-10}
IOPS=${IOPS:-1000}
RT=${RT:-0}
case $DEVICE in fast | slow | zram | dir) ;; *) echo "DEVICE=$DEVICE: fast, slow, zram or dir" >&2; exit 2 ;; esac
[ "$ROUNDS" -ge 10 ] 2>/dev/null || { echo "ROUNDS=$ROUNDS: at least 10" >&2; exit 2; }
command -v fio >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y fio >/dev/null
if [ -z "${KUBESLOW:-}" ]; then
  CGO_ENABLED=0 go build -trimpath -o bin/kubeslow ./cmd/kubeslow
  KUBESLOW=bin/kubeslow
  ksdesc="kubeslow $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- internal cmd || echo +changes)"
fi
ksdesc=${ksdesc:-$KUBESLOW}

tmp=$(mktemp -d /tmp/kubeslow-bench-fio.XXXXXX)
dev= ram= mnt= majmin= zram= throttle=/sys/fs/cgroup/blkio/blkio.throttle.write_iops_device
cleanup() {
  set +e
  [ -n "$mnt" ] && mountpoint -q "$mnt" && umount "$mnt"
  [ -n "$majmin" ] && echo "$majmin 0" >"$throttle"
  [ -n "$dev" ] && [ -z "$zram" ] && losetup -d "$dev"
  [ -n "$zram" ] && echo "$zram" >/sys/class/zram-control/hot_remove
  [ -n "$ram" ] && mountpoint -q "$ram" && umount "$ram"
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ "$DEVICE" = dir ]; then
  [ -d "${DIR:-}" ] || { echo "DEVICE=dir: DIR=$DIR is not a directory" >&2; exit 2; }
  where=$(cd "$DIR" && pwd)
  what="directory $where ($(df --output=source,fstype "$where" | tail -1 | tr -s ' '))"
elif [ "$DEVICE" = zram ]; then
  mnt=$tmp/mnt
  mkdir "$mnt"
  zram=$(cat /sys/class/zram-control/hot_add)
  dev=/dev/zram$zram
  echo lz4 >"/sys/block/zram$zram/comp_algorithm"
  echo 256M >"/sys/block/zram$zram/disksize"
  mkfs.ext4 -q -F "$dev"
  mount "$dev" "$mnt"
  where=$mnt
  what="ext4 on $dev (256 MiB, lz4)"
else
  ram=$tmp/ram mnt=$tmp/mnt
  mkdir "$ram" "$mnt"
  mount -t tmpfs -o size=512m kubeslow-bench-fio "$ram"
  truncate -s 256m "$ram/disk.img"
  dev=$(losetup --find --show "$ram/disk.img")
  mkfs.ext4 -q -F "$dev"
  mount "$dev" "$mnt"
  where=$mnt
  what="ext4 on $dev (a 256 MiB image on tmpfs)"
fi
if [ "$DEVICE" != dir ]; then
  if [ "$RT" = 1 ]; then
    jbd=$(pgrep -x "jbd2/$(basename "$dev")-8")
    chrt -f -p 20 "$jbd"
    what="$what; both tools and $dev's jbd2 thread (pid $jbd) at SCHED_FIFO 20"
  fi
  if [ "$DEVICE" = slow ]; then
    majmin=$(cat "/sys/block/$(basename "$dev")/dev")
    echo "$majmin $IOPS" >"$throttle"
    what="$what, writes held to $IOPS IOPS by blk-throttle ($majmin in the blkio root)"
  fi
fi

prio=
[ "$RT" = 1 ] && prio="chrt -f 20"
echo "$(date -u '+%Y-%m-%d %H:%M UTC'); $(nproc) cores; load average at start $(cut -d' ' -f1-3 /proc/loadavg)"
echo "$ksdesc vs $(fio --version), etcd's recipe on $what, $ROUNDS rounds"
printf '%-5s %-8s %10s %10s %10s %10s %7s %7s %5s\n' round first ks_p50_us ks_p99_us fio_p50_us fio_p99_us p50_x p99_x load
: >"$tmp/rows"
round=1
while [ "$round" -le "$ROUNDS" ]; do
  for tool in ks fio; do mkdir "$where/kubeslow-bench-fio-$round-$tool"; done
  run_ks() { $prio "$KUBESLOW" bench disk --path "$where/kubeslow-bench-fio-$round-ks" -o json >"$tmp/ks.json" 2>"$tmp/ks.err" || true; }
  run_fio() {
    $prio fio --name=etcd --directory="$where/kubeslow-bench-fio-$round-fio" --rw=write --ioengine=sync --fdatasync=1 \
      --size=22m --bs=2300 --output-format=json >"$tmp/fio.json"
  }
  if [ $((round % 2)) -eq 1 ]; then first=kubeslow; run_ks; run_fio; else first=fio; run_fio; run_ks; fi
  rm -rf "$where/kubeslow-bench-fio-$round-ks" "$where/kubeslow-bench-fio-$round-fio"
  python3 - "$tmp/ks.json" "$tmp/fio.json" "$round" "$first" "$tmp/ks.err" "$(cut -d' ' -f1 /proc/loadavg)" >>"$tmp/rows" <<'PY'
import json, sys
try:
    ks = json.load(open(sys.argv[1]))
    m = {x["name"]: x["value"] for r in ks["results"] for x in r.get("metrics", [])}
    k50, k99 = m["fdatasync_p50"] * 1e6, m["fdatasync_p99"] * 1e6
except (ValueError, KeyError) as e:
    sys.exit(f"kubeslow's report ({e}): " + open(sys.argv[5]).read())
lat = json.load(open(sys.argv[2]))["jobs"][0]["sync"]["lat_ns"]
f50, f99 = lat["percentile"]["50.000000"] / 1e3, lat["percentile"]["99.000000"] / 1e3
print(f"{sys.argv[3]} {sys.argv[4]} {k50:.1f} {k99:.1f} {f50:.1f} {f99:.1f} {k50/f50:.3f} {k99/f99:.3f} {sys.argv[6]}")
PY
  tail -1 "$tmp/rows" | awk '{printf "%-5s %-8s %10s %10s %10s %10s %7s %7s %5s\n", $1, $2, $3, $4, $5, $6, $7, $8, $9}'
  round=$((round + 1))
done
python3 - "$tmp/rows" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
col = lambda i: [float(r[i]) for r in rows]
med = statistics.median
print(f"median p50 ratio {med(col(6)):.3f} (per round {min(col(6)):.2f}-{max(col(6)):.2f}); "
      f"median p99 ratio {med(col(7)):.3f} (per round {min(col(7)):.2f}-{max(col(7)):.2f}); "
      f"ratio of the median p99s {med(col(3)) / med(col(5)):.3f} (kubeslow {med(col(3)):.1f} us, fio {med(col(5)):.1f} us)")
r = med(col(7))
print("goal (median p99 ratio 0.90-1.10):", "met" if 0.9 <= r <= 1.1 else "NOT met")
PY
echo "load average at end $(cut -d' ' -f1-3 /proc/loadavg)"
