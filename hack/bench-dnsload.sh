#!/bin/sh
# bench-dnsload.sh: kubeslow's DNS load generator (`kubeslow bench dns-load`) next to Debian's dnsperf against
# the same server in the same run (issue 17 part 2). NOT run in CI: it installs dnsperf, and its figures
# depend on the machine being idle.
#
# The server is `kubeslow agent dns-upstream` on loopback (no per-source limit). For each rate, ROUNDS
# rounds alternate the two tools at the same fixed rate (dnsperf -Q) over the same two names (one A record,
# one NXDOMAIN) for DURATION seconds; printed per round: achieved answers/s and p99 of each (dnsperf's p99
# from its per-query -v latencies, measured from the actual send; kubeslow's from the intended send time),
# and the ratios kubeslow/dnsperf, then their medians; and how late kubeslow's queries left (p99), the
# machine's scheduling delay that its p99, taken from the intended send time, includes.
#
#   hack/bench-dnsload.sh            # RATES="2000 8000" ROUNDS=3 DURATION=5
#
# SERVER=lab runs both against the lab's CoreDNS instead (the process on 198.19.255.1:53, reached from the
# host through the lab's uplink) over two cluster names (kubernetes.default's A record, from CoreDNS's cache,
# and an NXDOMAIN under default.svc.cluster.local); the lab must be up and the caller must hold its lock:
#   flock /run/kubeslow-lab.lock sh -c 'bin/kubeslow lab up --real-nodes 1 && SERVER=lab hack/bench-dnsload.sh; bin/kubeslow lab down'
set -eu
cd "$(dirname "$0")/.."
RATES=${RATES:-"2000 8000"}
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-5}
PORT=${PORT:-15353}
command -v dnsperf >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y dnsperf >/dev/null
CGO_ENABLED=0 go build -o bin/kubeslow ./cmd/kubeslow  # static, as the lab's images need it
tmp=$(mktemp -d)
if [ "${SERVER:-}" = lab ]; then
  HOST=198.19.255.1 PORT=53
  trap 'rm -rf "$tmp"' EXIT INT TERM
  NAME1=kubernetes.default.svc.cluster.local KIND1=service NAME2=nope.default.svc.cluster.local
  what="the lab's CoreDNS process on $HOST:$PORT"
else
  HOST=127.0.0.1
  bin/kubeslow agent dns-upstream --listen $HOST:$PORT >"$tmp/upstream.out" 2>&1 &
  up=$!
  trap 'kill $up 2>/dev/null; rm -rf "$tmp"' EXIT INT TERM
  until grep -q listening "$tmp/upstream.out"; do sleep 0.1; done
  NAME1=a.ext.kubeslow.test KIND1=external NAME2=x.invalid
  what="kubeslow agent dns-upstream on $HOST:$PORT"
fi
printf '%s A\n%s A\n' "$NAME1" "$NAME2" >"$tmp/names"
echo "dnsperf $(dnsperf -h 2>&1 | sed -n 's/^Version //p' | head -1) vs kubeslow, server $what, ${DURATION}s per run"
for rate in $RATES; do
  : >"$tmp/ratios"
  for round in $(seq "$ROUNDS"); do
    bin/kubeslow bench dns-load $HOST:$PORT --rate "$rate" --duration "${DURATION}s" --timeout 2s \
      --name $KIND1=$NAME1 --name nxdomain=$NAME2 -o json >"$tmp/ks.json" 2>/dev/null || true
    dnsperf -s $HOST -p $PORT -d "$tmp/names" -l "$DURATION" -Q "$rate" -t 2 -v >"$tmp/dp.out" 2>/dev/null
    python3 - "$tmp/ks.json" "$tmp/dp.out" "$rate" "$round" >>"$tmp/ratios" <<'PY'
import json, sys
ks = json.load(open(sys.argv[1]))
m = {x["name"]: x["value"] for r in ks["results"] for x in r.get("metrics", []) if "rate" in x.get("labels", {})}
lat = sorted(float(l.split()[-1]) for l in open(sys.argv[2]) if l.startswith(">"))
qps = [float(l.split(":")[1]) for l in open(sys.argv[2]) if "Queries per second" in l][0]
p99 = lat[int(0.99 * (len(lat) - 1))] if lat else float("nan")
print(f"{sys.argv[3]} {sys.argv[4]} {m['achieved_qps']:.0f} {m['latency_p99']*1e3:.3f} {qps:.0f} {p99*1e3:.3f} "
      f"{m['achieved_qps']/qps:.3f} {m['latency_p99']/p99 if p99 else float('nan'):.2f} {m['send_late_p99']*1e3:.3f}")
PY
  done
  python3 - "$tmp/ratios" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
print("rate  round  kubeslow q/s  kubeslow p99 ms  dnsperf q/s  dnsperf p99 ms  q/s ratio  p99 ratio  kubeslow send-late p99 ms")
for r in rows:
    print(f"{r[0]:>5} {r[1]:>5} {r[2]:>13} {r[3]:>16} {r[4]:>12} {r[5]:>15} {r[6]:>10} {r[7]:>10} {r[8]:>26}")
q = [float(r[6]) for r in rows]; p = [float(r[7]) for r in rows]
print(f"rate {rows[0][0]}: median q/s ratio {statistics.median(q):.3f} (range {min(q):.3f}-{max(q):.3f}), "
      f"median p99 ratio {statistics.median(p):.2f} (range {min(p):.2f}-{max(p):.2f})")
PY
done
