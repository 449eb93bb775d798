#!/usr/bin/env bash
# Record a fixture of the control plane's /proc and cgroup files for internal/source/agent's control-plane tests:
# the files `kubeslow agent control-plane` reads of every kube-apiserver, etcd, kube-scheduler and
# kube-controller-manager process running on this machine (the lab's, started with `kubeslow lab up`), the
# node-wide /proc/stat and /proc/pressure/cpu, and their cgroups' quota, cpu.stat and cpu.pressure.
# Network namespaces are recorded as the links' targets (dangling symlinks "net:[inode]"); "self" is
# recorded as the first component's namespace, as an agent in that namespace would see it.
#
#   hack/record-cp-fixture.sh internal/source/agent/testdata/controlplane
set -euo pipefail
dst=${1:?destination directory}
rm -rf "$dst"
mkdir -p "$dst/proc" "$dst/cgroup"
cp /proc/stat "$dst/proc/stat"
[ -r /proc/pressure/cpu ] && mkdir -p "$dst/proc/pressure" && cp /proc/pressure/cpu "$dst/proc/pressure/cpu"
self=""
for pid in $(ls /proc | grep -E '^[0-9]+$'); do
  argv0=$( (tr "\0" "\n" < /proc/$pid/cmdline | head -1) 2>/dev/null) || continue
  case "$(basename -- "${argv0:-x}")" in
    kube-apiserver|etcd|kube-scheduler|kube-controller-manager|kubelet) ;;
    *) continue ;;
  esac
  d="$dst/proc/$pid"
  mkdir -p "$d/ns" "$d/task"
  for f in cmdline stat status cgroup schedstat; do cp /proc/$pid/$f "$d/$f"; done
  ln -s "$(readlink /proc/$pid/ns/net)" "$d/ns/net"
  [ -z "$self" ] && [ "$(basename -- "$argv0")" != kubelet ] && self=$(readlink /proc/$pid/ns/net)
  for t in /proc/$pid/task/*; do
    mkdir -p "$d/task/${t##*/}"
    cp "$t/schedstat" "$t/stat" "$d/task/${t##*/}/" 2>/dev/null || true
  done
  # The cpu controller's cgroup (v1) and its ancestors' quota and throttling; the cgroup2 directory's PSI.
  while IFS=: read -r _ ctl path; do
    case ",$ctl," in
      *,cpu,*) root=/sys/fs/cgroup/cpu
        p=$path
        while :; do
          mkdir -p "$dst/cgroup/cpu$p"
          for f in cpu.cfs_quota_us cpu.cfs_period_us cpu.stat; do cp "$root$p/$f" "$dst/cgroup/cpu$p/" 2>/dev/null || true; done
          [ "$p" = / ] && break
          p=$(dirname "$p")
        done ;;
      ,,) if [ -d /sys/fs/cgroup/unified ]; then
          mkdir -p "$dst/cgroup/unified$path"
          cp /sys/fs/cgroup/unified/cgroup.controllers "$dst/cgroup/unified/" 2>/dev/null || true
          cp "/sys/fs/cgroup/unified$path/cpu.pressure" "$dst/cgroup/unified$path/" 2>/dev/null || true
        fi ;;
    esac
  done < /proc/$pid/cgroup
done
mkdir -p "$dst/proc/self/ns"
ln -s "${self:?no control-plane process found}" "$dst/proc/self/ns/net"
echo "recorded into $dst: $(ls "$dst/proc" | grep -cE '^[0-9]+$') processes"
