#!/bin/sh
# record-coredns.sh: records the CoreDNS scrapes dns.facts' tests read (internal/measure/dnsfacts/testdata/
# recorded-*), from real CoreDNS 1.15 processes on loopback. Not run in CI; needs the lab's CoreDNS build
# (bin/kubeslow lab build) and nothing else.
#
# Three replicas (a, b, c), each a CoreDNS with cache and forward, are loaded alike by `kubeslow bench
# dns-load` (200 q/s for 10 s of distinct external names, so every query misses the cache and is forwarded).
# a forwards to an upstream (`kubeslow agent dns-upstream`) that answers 100 q/s per source and drops the
# rest, as a cloud resolver does past its per-VM limit (case B); b and c forward to one without a limit.
# Each replica's /metrics is saved before and after the load.
set -eu
cd "$(dirname "$0")/.."
CD=${COREDNS:-$(ls -d "$HOME"/.cache/kubeslow/bin/coredns-*/coredns | tail -1)}
OUT=internal/measure/dnsfacts/testdata
go build -o bin/kubeslow ./cmd/kubeslow
tmp=$(mktemp -d)
pids=""
trap 'for p in $pids; do kill $p 2>/dev/null; done; rm -rf "$tmp"' EXIT INT TERM
bin/kubeslow agent dns-upstream --listen 127.0.0.1:15354 --limit 100 >"$tmp/limited.out" 2>&1 & pids="$pids $!"
bin/kubeslow agent dns-upstream --listen 127.0.0.1:15355 >"$tmp/free.out" 2>&1 & pids="$pids $!"
i=0
for r in a b c; do
  i=$((i + 1))
  up=15355; [ $r = a ] && up=15354
  cat >"$tmp/Corefile.$r" <<CF
.:1530$i {
    bind 127.0.0.1
    errors
    prometheus 127.0.0.1:1930$i
    cache 30
    forward . 127.0.0.1:$up {
        max_fails 0
    }
}
CF
  "$CD" -conf "$tmp/Corefile.$r" >"$tmp/coredns.$r.log" 2>&1 & pids="$pids $!"
done
python3 -c 'print("\n".join("external n%d.ext.kubeslow.test" % i for i in range(2000)))' >"$tmp/names"
get() { python3 -c 'import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1]).read().decode())' "$1"; }
for i in 1 2 3; do until get http://127.0.0.1:1930$i/metrics >/dev/null 2>&1; do sleep 0.2; done; done
i=0
for r in a b c; do i=$((i + 1)); get http://127.0.0.1:1930$i/metrics >"$OUT/recorded-$r-before.txt"; done
i=0
for r in a b c; do
  i=$((i + 1))
  bin/kubeslow bench dns-load 127.0.0.1:1530$i --names-file "$tmp/names" --rate 200 --duration 10s --timeout 6s >"$tmp/load.$r" 2>&1 &
  pids="$pids $!"
done
wait $(echo "$pids" | awk '{print $NF, $(NF-1), $(NF-2)}') || true
i=0
for r in a b c; do i=$((i + 1)); get http://127.0.0.1:1930$i/metrics >"$OUT/recorded-$r-after.txt"; grep -E "achieved_qps|timeouts|servfail" "$tmp/load.$r" | sed "s/^/$r: /"; done
grep -h dropped "$tmp"/*.out || true
