#!/bin/sh
# bench-ingress.sh: kubeslow's HTTP load generator (`kubeslow bench http`) next to Debian's wrk through the lab's
# Traefik (issue 28), in the same run: can kubeslow's generator saturate an ingress as cheaply as wrk? NOT run in
# CI: it installs wrk, needs a lab with --ingress traefik, and its figures depend on the machine being idle.
#
# Both tools run on the host and send keep-alive GETs (no body) over CONNS connections with one thread (wrk -t 1,
# kubeslow --threads 1) to the lab's test Ingress (http://198.19.255.11:30080/ingress-test: Traefik on lab-node-1,
# which proxies to kubeslow's agent server behind the Service ingress-test). ROUNDS rounds alternate the order of
# the two tools; each runs DURATION seconds. The second run of a round is the slower one, whichever tool it is
# (measured 2026-11-26: both tools' CPU per request and Traefik's higher in second place, by up to a fifth), so
# ROUNDS is made even (each tool second as often as first) and the verdict is the geometric mean of the rounds'
# ratios, with the mean of each order beside it. Printed per round: requests/s of each, the generator's own CPU
# (user + system, from its process's rusage, GNU time) per request, and the ratios kubeslow/wrk; then the medians.
# Traefik's CPU per request over the same runs (its pod's cpuacct) shows it is the proxy, not the generators,
# that costs: the generator is cheaper than what it loads.
#
# The caller holds the lab lock:
#   flock /run/kubeslow-lab.lock sh -c 'bin/kubeslow lab up --nodes 0 --real-nodes 2 --ingress traefik && hack/bench-ingress.sh; bin/kubeslow lab down'
set -eu
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-6}
ROUNDS=$(( (ROUNDS + 1) / 2 * 2 )) # even: each tool runs second as often as first
DURATION=${DURATION:-5}
CONNS=${CONNS:-8}
command -v wrk >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y wrk >/dev/null
[ -x /usr/bin/time ] || DEBIAN_FRONTEND=noninteractive apt-get install -y time >/dev/null
[ -x bin/kubeslow ] || CGO_ENABLED=0 go build -o bin/kubeslow ./cmd/kubeslow
# lab.TraefikURL() + lab.IngressTestPath: real node 1's address, Traefik's node port.
URL=${URL:-http://198.19.255.11:30080/ingress-test}
code=$(curl -s -o /dev/null -w '%{http_code} %{size_download}' "$URL" || true)
if [ "$code" != "404 0" ]; then
  echo "bench-ingress: $URL answered '$code', not the test backend's empty 404: is the lab up with --ingress traefik?" >&2
  exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

# Traefik's pod cgroup (cpuacct, cgroup v1 on the lab's real nodes): its CPU over each run.
traefik_cg=""
for d in /sys/fs/cgroup/cpuacct/kubeslow-lab/pods-lab-node-1/kubepods/*/pod*/ /sys/fs/cgroup/cpuacct/kubeslow-lab/pods-lab-node-1/kubepods/pod*/; do
  [ -d "$d" ] || continue
  for c in "$d"*/; do
    if grep -qs traefik "$c/cgroup.procs" 2>/dev/null || { p=$(head -1 "$c/cgroup.procs" 2>/dev/null) && [ -n "$p" ] && grep -qs '^/traefik' "/proc/$p/cmdline" 2>/dev/null; }; then
      traefik_cg=$c
    fi
  done
done
traefik_ns() { if [ -n "$traefik_cg" ]; then cat "$traefik_cg/cpuacct.usage"; else echo 0; fi; }

run_wrk() { # prints: requests cpu_seconds traefik_ns
  t0=$(traefik_ns)
  /usr/bin/time -f '%U %S' -o "$tmp/wrk.time" wrk -t 1 -c "$CONNS" -d "${DURATION}s" "$URL" >"$tmp/wrk.out"
  t1=$(traefik_ns)
  req=$(sed -n 's/^ *\([0-9]*\) requests in.*/\1/p' "$tmp/wrk.out")
  cpu=$(awk '{print $1+$2}' "$tmp/wrk.time")
  echo "$req $cpu $((t1 - t0))"
}
run_ks() {
  t0=$(traefik_ns)
  /usr/bin/time -f '%U %S' -o "$tmp/ks.time" bin/kubeslow bench http "$URL" --threads 1 -c "$CONNS" -d "${DURATION}s" --method GET --body 0 -o json >"$tmp/ks.json"
  t1=$(traefik_ns)
  req=$(jq -r '[.results[0].metrics[] | select(.name=="requests" and (.labels|length)==0)][0].value // ([.results[0].metrics[] | select(.name=="requests")][0].value)' "$tmp/ks.json")
  cpu=$(awk '{print $1+$2}' "$tmp/ks.time")
  echo "$req $cpu $((t1 - t0))"
}

echo "# through Traefik: $URL, $CONNS keep-alive connections, 1 thread each, ${DURATION}s x $ROUNDS rounds (Traefik cgroup: ${traefik_cg:-not found})"
printf '%-5s %12s %12s %8s %14s %14s %8s %14s %14s\n' round "wrk req/s" "ks req/s" "rps k/w" "wrk cpu/req" "ks cpu/req" "cpu k/w" "traefik/req w" "traefik/req k"
: >"$tmp/rows"
i=1
while [ "$i" -le "$ROUNDS" ]; do
  if [ $((i % 2)) -eq 1 ]; then w=$(run_wrk); k=$(run_ks); else k=$(run_ks); w=$(run_wrk); fi
  echo "$i $w $k" | awk -v d="$DURATION" '{
    wr=$2/d; kr=$5/d; wc=$3/$2*1e6; kc=$6/$5*1e6; tw=$4/$2/1e3; tk=$7/$5/1e3;
    printf "%-5d %12.0f %12.0f %8.2f %12.1fus %12.1fus %8.2f %12.1fus %12.1fus\n", $1, wr, kr, kr/wr, wc, kc, kc/wc, tw, tk
    print $1, wr, kr, kr/wr, wc, kc, kc/wc, tw, tk >> "'"$tmp/rows"'"
  }'
  i=$((i + 1))
done
med() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
col() { awk -v c="$1" '{print $c}' "$tmp/rows" | med; }
printf 'median: wrk %.0f req/s, kubeslow %.0f req/s (%.2fx); CPU per request wrk %.1f us, kubeslow %.1f us: kubeslow/wrk %.2f (min %.2f, max %.2f); Traefik per request %.1f us (wrk) / %.1f us (kubeslow)\n' \
  "$(col 2)" "$(col 3)" "$(col 4)" "$(col 5)" "$(col 6)" "$(col 7)" \
  "$(awk '{print $7}' "$tmp/rows" | sort -g | head -1)" "$(awk '{print $7}' "$tmp/rows" | sort -g | tail -1)" "$(col 8)" "$(col 9)"
# Geometric means of the CPU ratio: over every round, over the rounds where kubeslow ran second (odd) and first
# (even).
gm() { awk "$1"' {s += log($7); n++} END {if (n) printf "%.3f", exp(s / n); else print "nan"}' "$tmp/rows"; }
ratio=$(gm '1')
printf 'CPU per request kubeslow/wrk, geometric mean of %d rounds: %s (kubeslow second: %s, kubeslow first: %s)\n' \
  "$ROUNDS" "$ratio" "$(gm '$1 % 2 == 1')" "$(gm '$1 % 2 == 0')"
if awk -v r="$ratio" 'BEGIN {exit !(r <= 1)}'; then
  echo "kubeslow's CPU per request is at or below wrk's through Traefik (geometric mean $ratio)"
else
  echo "kubeslow's CPU per request is ABOVE wrk's through Traefik (geometric mean $ratio)"
  exit 1
fi
