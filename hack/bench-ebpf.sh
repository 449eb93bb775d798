#!/bin/sh
# bench-ebpf.sh: the node agent's eBPF tracers' own cost (issue 42). NOT run in CI: it installs dnsperf, needs
# root (eBPF) and an idle machine.
#
# `kubeslow agent node` reads this host for WINDOW seconds with its tracers (--dns, the default: DNS queries
# and TCP connects) and without them (--dns=false), under each load, on loopback only:
#   - dnsperf at 1,000 and 10,000 queries/s against `kubeslow agent dns-upstream`;
#   - wrk with a new connection per request (Connection: close) against nginx: as many connects as it makes.
# For each: the agent's CPU (utime + stime of /proc/PID/stat, read after its report while it waits on
# --ready-file, then stopped by PID) as a share of one core over the window, its peak RSS (VmHWM), what the
# load tool achieved, and what the tracers counted (from the agent's JSON) against it.
#
#   hack/bench-ebpf.sh            # WINDOW=20
set -eu
cd "$(dirname "$0")/.."
WINDOW=${WINDOW:-20}
DNSPORT=${DNSPORT:-53} # the DNS tracer watches port 53
HTTPPORT=${HTTPPORT:-18088}
command -v dnsperf >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y dnsperf >/dev/null
command -v wrk >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y wrk >/dev/null
command -v nginx >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y nginx-light >/dev/null
CGO_ENABLED=0 go build -o bin/kubeslow ./cmd/kubeslow
tmp=$(mktemp -d)
chmod 755 "$tmp" # nginx's worker (nobody) reads its root under it
bin/kubeslow agent dns-upstream --listen 127.0.0.1:$DNSPORT >"$tmp/upstream.out" 2>&1 &
up=$!
mkdir -p "$tmp/www"
echo ok >"$tmp/www/index.html"
cat >"$tmp/nginx.conf" <<EOF
worker_processes 1;
error_log $tmp/nginx.err;
pid $tmp/nginx.pid;
events { worker_connections 4096; }
http { access_log off; server { listen 127.0.0.1:$HTTPPORT; root $tmp/www; keepalive_timeout 0; } }
EOF
nginx -c "$tmp/nginx.conf" -g 'daemon off;' &
ngx=$!
trap 'kill $up $ngx 2>/dev/null; rm -rf "$tmp"' EXIT INT TERM
# ready within 10 s each, or the bench stops with what the server said
for i in $(seq 100); do grep -q listening "$tmp/upstream.out" && break; sleep 0.1; done
grep -q listening "$tmp/upstream.out" || { cat "$tmp/upstream.out"; exit 1; }
for i in $(seq 100); do curl -sf -o /dev/null http://127.0.0.1:$HTTPPORT/ && break; sleep 0.1; done
curl -sf -o /dev/null http://127.0.0.1:$HTTPPORT/ || { tail -3 "$tmp/nginx.err"; exit 1; }
for i in $(seq 1 50); do echo "q$i.ext.kubeslow.test A"; done >"$tmp/queries"
hz=$(getconf CLK_TCK)

# agent DNS(true|false) LOAD...: runs the agent over WINDOW seconds with LOAD beside it; prints a row.
agent() {
	dns=$1
	shift
	rm -f "$tmp/ready"
	bin/kubeslow agent node --dns="$dns" --window "${WINDOW}s" --probe-bytes 0 --kube-proxy-metrics "" \
		--node-name bench --ready-file "$tmp/ready" >"$tmp/agent.json" 2>"$tmp/agent.err" &
	a=$!
	sleep 1 # the tracers attached (the agent starts them first)
	"$@" >"$tmp/load.out" 2>&1 || true
	until [ -e "$tmp/ready" ]; do sleep 0.2; done
	set -- $(cut -d' ' -f14,15 /proc/$a/stat)
	cpu=$(echo "($1 + $2) / $hz" | bc -l)
	hwm=$(awk '/VmHWM/ {print $2}' /proc/$a/status)
	kill $a
	wait $a 2>/dev/null || true
	q=$(jq '[.dns.clients[]? | select(.server == "127.0.0.1:'$DNSPORT'") | .queries] | add // 0' "$tmp/agent.json")
	c=$(jq '[.connects.clients[]? | select(.dest == "127.0.0.1:'$HTTPPORT'") | .connects] | add // 0' "$tmp/agent.json")
	w=$(jq '.dns.window_seconds // .connects.window_seconds // 0' "$tmp/agent.json")
	printf '%-34s tracers %-5s  agent CPU %6.2f s = %5.2f%% of a core over %.1f s, peak RSS %5.1f MiB; traced: %s queries, %s connects\n' \
		"$what" "$dns" "$cpu" "$(echo "100 * $cpu / $WINDOW" | bc -l)" "$w" "$(echo "$hwm / 1024" | bc -l)" "$q" "$c"
}

echo "kubeslow agent node --window ${WINDOW}s on $(nproc) cores, loopback; load for $((WINDOW - 3)) s inside each read"
for rate in 1000 10000; do
	what="dnsperf -Q $rate"
	for dns in false true; do
		agent $dns dnsperf -s 127.0.0.1 -p $DNSPORT -d "$tmp/queries" -Q $rate -l $((WINDOW - 3)) -q 1000
		grep -E "Queries completed|Queries per second" "$tmp/load.out" | sed 's/^ */    dnsperf: /'
	done
done
what="wrk, a connection per request"
for dns in false true; do
	agent $dns wrk -t1 -c8 -d$((WINDOW - 3))s -H "Connection: close" http://127.0.0.1:$HTTPPORT/
	grep -E "requests in|Requests/sec" "$tmp/load.out" | sed 's/^ */    wrk: /'
done
